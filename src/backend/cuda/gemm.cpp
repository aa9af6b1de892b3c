#include "backend/cuda/gemm.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace brisk::cuda {
namespace {

void check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(st == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::kLimit : ErrorCode::kInternal,
                std::string("cuBLASLt ") + what + " failed with status " + std::to_string(int(st)));
}

// Decode steps multiply a few token rows by each weight, where cuBLASLt's first heuristic
// choice can leave much of the bandwidth unused (a 3584 x 3584 weight at 64 rows makes a few
// dozen output tiles for 132 SMs, unless the product is split along k). For 16-bit products
// of a power-of-two row count up to kTunedRows (the batch buckets), the heuristic's first
// kCandidates are timed once on the real operands with a cold L2, and another is kept only
// if it is clearly faster, so that reruns keep choosing the same algorithm.
constexpr int64_t kTunedRows = 64;
constexpr int kCandidates = 16;
constexpr int kTimedRuns = 5;
constexpr float kClearlyFaster = 0.97f;

bool tuned_shape(int64_t n, Gemm::Operands type) {
  return type != Gemm::Operands::F32 && n <= kTunedRows && (n & (n - 1)) == 0;
}

}  // namespace

Gemm::Gemm(cudaStream_t stream, bool tune) : stream_(stream), tune_(tune) {
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

const Gemm::Plan& Gemm::plan(int64_t m, int64_t n, int64_t k, Operands type, const void* w, const void* x,
                             bool accumulate) {
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
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream_, &capturing);
  const bool tune = tune_ && tuned_shape(n, type) && capturing == cudaStreamCaptureStatusNone;
  std::vector<cublasLtMatmulHeuristicResult_t> results(tune ? kCandidates : 1);
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, int(results.size()),
                                                     results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(st, "heuristic");
  if (found == 0)
    throw Error(ErrorCode::kUnsupported, "cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                                             std::to_string(n) + "x" + std::to_string(k) + " product");
  p.algo = found > 1 ? fastest(p, results.data(), found, w, x, m, n, accumulate) : results[0].algo;
  return plans_.emplace(key, p).first->second;
}

cublasLtMatmulAlgo_t Gemm::fastest(const Plan& p, const cublasLtMatmulHeuristicResult_t* candidates, int count,
                                   const void* w, const void* x, int64_t m, int64_t n, bool accumulate) {
  // The timed products write a scratch output; a memset larger than L2 before each evicts
  // the weight, as the other layers' weights do in a real step.
  int device = 0, l2 = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  const size_t flush_bytes = std::max<size_t>(size_t(l2) * 2, 64u << 20);
  void* y = nullptr;
  void* flush = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  const size_t y_bytes = size_t(m * n) * sizeof(float);
  const bool ready = cudaMalloc(&y, y_bytes) == cudaSuccess && cudaMalloc(&flush, flush_bytes) == cudaSuccess &&
                     cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess &&
                     cudaMemsetAsync(y, 0, y_bytes, stream_) == cudaSuccess;
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  std::vector<float> median(size_t(count), -1.f);
  for (int i = 0; ready && i < count; ++i) {
    if (candidates[i].state != CUBLAS_STATUS_SUCCESS) continue;
    std::vector<float> ms;
    for (int r = 0; r <= kTimedRuns; ++r) {  // run 0 warms up
      cudaMemsetAsync(flush, r, flush_bytes, stream_);
      cudaEventRecord(start, stream_);
      const cublasStatus_t st = cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c,
                                               &candidates[i].algo, workspace_, kWorkspaceBytes, stream_);
      cudaEventRecord(stop, stream_);
      float t = 0;
      if (st != CUBLAS_STATUS_SUCCESS || cudaEventSynchronize(stop) != cudaSuccess ||
          cudaEventElapsedTime(&t, start, stop) != cudaSuccess) {
        ms.clear();
        break;
      }
      if (r > 0) ms.push_back(t);
    }
    if (ms.empty()) continue;
    std::nth_element(ms.begin(), ms.begin() + ptrdiff_t(ms.size() / 2), ms.end());
    median[size_t(i)] = ms[ms.size() / 2];
  }
  cudaGetLastError();  // a candidate that failed to launch leaves nothing behind
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  cudaFree(flush);
  cudaFree(y);
  int best = 0;
  for (int i = 1; i < count; ++i)
    if (median[size_t(i)] > 0 && (median[size_t(best)] <= 0 || median[size_t(i)] < median[size_t(best)])) best = i;
  const bool clearly = median[0] <= 0 || median[size_t(best)] < kClearlyFaster * median[0];
  return clearly ? candidates[best].algo : candidates[0].algo;
}

void Gemm::run(const void* w, const void* x, float* y, int64_t m, int64_t n, int64_t k, Operands type,
               bool accumulate) {
  const Plan& p = plan(m, n, k, type, w, x, accumulate);
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  check(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                       kWorkspaceBytes, stream_),
        "matmul");
}

}  // namespace brisk::cuda
