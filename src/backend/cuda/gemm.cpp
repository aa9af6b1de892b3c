#include "backend/cuda/gemm.hpp"

#include <string>

#include "base/error.hpp"

namespace brisk::cuda {
namespace {

void check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(st == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::kLimit : ErrorCode::kInternal,
                std::string("cuBLASLt ") + what + " failed with status " + std::to_string(int(st)));
}

}  // namespace

Gemm::Gemm(cudaStream_t stream) : stream_(stream) {
  check(cublasLtCreate(&handle_), "create");
  if (cudaMalloc(&workspace_, kWorkspaceBytes) != cudaSuccess)
    throw Error(ErrorCode::kLimit, "out of GPU memory for the cuBLASLt workspace (64 MiB)");
}

void Gemm::destroy(const Plan& p) {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
}

Gemm::~Gemm() {
  for (auto& [key, p] : plans_) destroy(p);
  for (auto& [key, p] : fp8_plans_) destroy(p.plan);
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

const Gemm::Plan& Gemm::plan(int64_t m, int64_t n, int64_t k, Operands type) {
  auto key = std::make_tuple(m, n, k, type);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan p;
  const cudaDataType_t in = type == Operands::F16 ? CUDA_R_16F : type == Operands::BF16 ? CUDA_R_16BF : CUDA_R_32F;
  check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "transa");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "transb");
  // Column-major views of the row-major operands: W^T is k x m, X^T is k x n, Y^T is m x n.
  check(cublasLtMatrixLayoutCreate(&p.a, in, uint64_t(k), uint64_t(m), k), "layout a");
  check(cublasLtMatrixLayoutCreate(&p.b, in, uint64_t(k), uint64_t(n), k), "layout b");
  check(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, uint64_t(m), uint64_t(n), m), "layout c");
  if (!first_algo(p))
    throw Error(ErrorCode::kUnsupported, "cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                                             std::to_string(n) + "x" + std::to_string(k) + " product");
  return plans_.emplace(key, p).first->second;
}

// The first algorithm cuBLASLt's heuristic offers (false: none, or no such product at all).
bool Gemm::first_algo(Plan& p) {
  cublasLtMatmulPreference_t pref;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  size_t ws = kWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
        "workspace preference");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) check(st, "heuristic");
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) return false;
  p.algo = result.algo;
  return true;
}

// An FP8 plan with the scaling modes of `scaling` and output type `out`; false (and nothing
// kept) where this cuBLASLt or GPU has no such product.
bool Gemm::make_fp8_plan(int64_t m, int64_t n, int64_t k, Fp8Scaling scaling, cudaDataType_t out, Plan& p) {
  check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "FP8 matmul desc");
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;  // FP8 wants both operands k-major ("TN")
  const bool outer = scaling == Fp8Scaling::Outer;
  const int32_t mode_a = outer ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  const int32_t mode_b = outer ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  const void* any = workspace_;  // scale pointers are set per call; the heuristic sees a valid one
  bool ok = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) == 0 &&
            cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)) == 0 &&
            cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof(mode_a)) == 0 &&
            cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof(mode_b)) == 0 &&
            cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &any, sizeof(any)) == 0 &&
            cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &any, sizeof(any)) == 0;
  if (ok) {
    check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(m), k), "layout a");
    check(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), k), "layout b");
    check(cublasLtMatrixLayoutCreate(&p.c, out, uint64_t(m), uint64_t(n), m), "layout c");
    ok = first_algo(p);
  }
  if (!ok) destroy(p), p = Plan{};
  return ok;
}

const Gemm::Fp8Plan& Gemm::fp8_plan(int64_t m, int64_t n, int64_t k, Fp8Scaling scaling) {
  auto key = std::make_tuple(m, n, k, scaling);
  auto it = fp8_plans_.find(key);
  if (it != fp8_plans_.end()) return it->second;
  Fp8Plan f;
  if (make_fp8_plan(m, n, k, scaling, CUDA_R_32F, f.plan))
    f.out = Fp8Output::F32;
  else if (make_fp8_plan(m, n, k, scaling, CUDA_R_16BF, f.plan))
    f.out = Fp8Output::BF16;
  return fp8_plans_.emplace(key, f).first->second;
}

Gemm::Fp8Output Gemm::fp8_output(int64_t m, int64_t n, int64_t k, Fp8Scaling scaling) {
  return fp8_plan(m, n, k, scaling).out;
}

void Gemm::run_fp8(const Fp8Operands& op, void* out, int64_t m, int64_t n, int64_t k, bool accumulate) {
  const Fp8Plan& f = fp8_plan(m, n, k, op.scaling);
  if (f.out == Fp8Output::None) throw Error(ErrorCode::kInternal, "an FP8 product without an FP8 algorithm");
  check(cublasLtMatmulDescSetAttribute(f.plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &op.w_scales,
                                       sizeof(op.w_scales)),
        "A scales");
  check(cublasLtMatmulDescSetAttribute(f.plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &op.x_scales,
                                       sizeof(op.x_scales)),
        "B scales");
  const float alpha = 1.f, beta = accumulate && f.out == Fp8Output::F32 ? 1.f : 0.f;
  check(cublasLtMatmul(handle_, f.plan.desc, &alpha, op.w, f.plan.a, op.x, f.plan.b, &beta, out, f.plan.c, out,
                       f.plan.c, &f.plan.algo, workspace_, kWorkspaceBytes, stream_),
        "FP8 matmul");
}

void Gemm::run(const void* w, const void* x, float* y, int64_t m, int64_t n, int64_t k, Operands type,
               bool accumulate) {
  const Plan& p = plan(m, n, k, type);
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  check(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                       kWorkspaceBytes, stream_),
        "matmul");
}

}  // namespace brisk::cuda
