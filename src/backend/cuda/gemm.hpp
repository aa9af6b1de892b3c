// Prefill matrix products on the tensor cores through cuBLASLt: Y[n][rows] = X[n][cols] W^T
// with 16-bit operands (bf16, or f16 for F16 weights) and float32 accumulation and output,
// or plain float32 operands for the exact mode the oracle comparisons use.
// Quantized weights are first dequantized into a scratch matrix; activations are converted
// into another. Algorithms are chosen once per shape by cuBLASLt's heuristic and cached.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace brisk::cuda {

class Gemm {
 public:
  explicit Gemm(cudaStream_t stream);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  enum class Operands { BF16, F16, F32 };
  // y (+)= w * x^T, all device memory: w [m][k] and x [n][k] row-major, y [n][m] float.
  void run(const void* w, const void* x, float* y, int64_t m, int64_t n, int64_t k, Operands type, bool accumulate);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  const Plan& plan(int64_t m, int64_t n, int64_t k, Operands type);

  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  static constexpr size_t kWorkspaceBytes = 64ull << 20;
  std::map<std::tuple<int64_t, int64_t, int64_t, Operands>, Plan> plans_;
};

}  // namespace brisk::cuda
