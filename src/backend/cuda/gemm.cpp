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

Gemm::~Gemm() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
  }
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
  cublasLtMatmulPreference_t pref;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  size_t ws = kWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
        "workspace preference");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(st, "heuristic");
  if (found == 0)
    throw Error(ErrorCode::kUnsupported, "cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                                             std::to_string(n) + "x" + std::to_string(k) + " product");
  p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
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
