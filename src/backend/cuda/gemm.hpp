// Prefill matrix products on the tensor cores through cuBLASLt: Y[n][rows] = X[n][cols] W^T
// with 16-bit operands (bf16, or f16 for F16 weights) and float32 accumulation and output,
// or plain float32 operands for the exact mode the oracle comparisons use.
// Quantized weights are first dequantized into a scratch matrix; activations are converted
// into another. FP8 E4M3 weights instead meet FP8 activations on the FP8 tensor cores
// (sm_89+), with cuBLASLt applying the scales in the epilogue (run_fp8). Algorithms are
// chosen once per shape by cuBLASLt's heuristic and cached.
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

  // FP8 products y = (w * x^T) scaled: w [m][k] and x [n][k] E4M3, row-major.
  //   Outer: w_scales [m] (one per row: per-channel, or per-tensor repeated), x_scales [n].
  //   Block128: w_scales [ceil(m / 128)][ceil(k / 128)] (128 x 128 blocks), x_scales one per
  //   token and 128 columns at fp8_x_scale_index.
  enum class Fp8Scaling { Outer, Block128 };
  struct Fp8Operands {
    const void* w = nullptr;
    const float* w_scales = nullptr;
    const void* x = nullptr;
    const float* x_scales = nullptr;
    Fp8Scaling scaling = Fp8Scaling::Outer;
  };
  // What cuBLASLt writes for such a product on this GPU: float (added to y when accumulating),
  // bf16 (the caller adds it into y: add_bf16), or nothing (no FP8 algorithm: dequantize).
  enum class Fp8Output { None, F32, BF16 };
  Fp8Output fp8_output(int64_t m, int64_t n, int64_t k, Fp8Scaling scaling);
  // out: y (F32) or n * m bf16 scratch (BF16, written, not accumulated).
  void run_fp8(const Fp8Operands& op, void* out, int64_t m, int64_t n, int64_t k, bool accumulate);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  const Plan& plan(int64_t m, int64_t n, int64_t k, Operands type);
  bool first_algo(Plan& p);
  static void destroy(const Plan& p);
  struct Fp8Plan {
    Plan plan;
    Fp8Output out = Fp8Output::None;
  };
  const Fp8Plan& fp8_plan(int64_t m, int64_t n, int64_t k, Fp8Scaling scaling);
  bool make_fp8_plan(int64_t m, int64_t n, int64_t k, Fp8Scaling scaling, cudaDataType_t out, Plan& p);

  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  static constexpr size_t kWorkspaceBytes = 64ull << 20;
  std::map<std::tuple<int64_t, int64_t, int64_t, Operands>, Plan> plans_;
  std::map<std::tuple<int64_t, int64_t, int64_t, Fp8Scaling>, Fp8Plan> fp8_plans_;
};

}  // namespace brisk::cuda
