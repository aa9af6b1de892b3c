// Prefill matrix products on the tensor cores through cuBLASLt: Y[n][rows] = X[n][cols] W^T
// with 16-bit operands (bf16, or f16 for F16 weights) and float32 accumulation and output,
// or plain float32 operands for the exact mode the oracle comparisons use.
// Quantized weights are first dequantized into a scratch matrix; activations are converted
// into another. Algorithms are chosen once per shape and cached: by cuBLASLt's heuristic,
// or, for the few-row 16-bit products of decode steps, by timing its top candidates.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace brisk::cuda {

class Gemm {
 public:
  // tune: time the heuristic's candidates for decode-sized 16-bit products (gemm.cpp).
  Gemm(cudaStream_t stream, bool tune);
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
  const Plan& plan(int64_t m, int64_t n, int64_t k, Operands type, const void* w, const void* x, bool accumulate);
  // The fastest of the heuristic's candidates (first = its own choice) on these operands.
  cublasLtMatmulAlgo_t fastest(const Plan& p, const cublasLtMatmulHeuristicResult_t* candidates, int count,
                               const void* w, const void* x, int64_t m, int64_t n, bool accumulate);

  cudaStream_t stream_;
  bool tune_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  static constexpr size_t kWorkspaceBytes = 64ull << 20;
  std::map<std::tuple<int64_t, int64_t, int64_t, Operands>, Plan> plans_;
};

}  // namespace brisk::cuda
