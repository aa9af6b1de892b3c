// Row-wise and elementwise ops of the block: RMSNorm (one block per row, float32 sum in a
// fixed tree order), the gated activation, residual add, and the float -> 16-bit conversion
// that feeds the tensor-core GEMM.
#include "backend/cuda/kernels.cuh"

namespace brisk::cuda {
namespace {

constexpr int kNormThreads = 256;

__global__ void rmsnorm_kernel(const float* x, int64_t dim, const float* __restrict__ w, float eps, float* out) {
  pdl_wait();
  pdl_launch_dependents();
  const float* xr = x + int64_t(blockIdx.x) * dim;
  float* o = out + int64_t(blockIdx.x) * dim;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) ss += xr[i] * xr[i];
  __shared__ float part[kNormThreads / 32];
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < kNormThreads / 32 ? part[threadIdx.x] : 0.f;
    v = warp_sum(v);
    if (threadIdx.x == 0) part[0] = v;
  }
  __syncthreads();
  const float inv = rsqrtf(part[0] / float(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) o[i] = xr[i] * inv * w[i];
}

__global__ void act_mul_kernel(const float* gate, const float* up, int64_t n, bool gelu, float* out) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  float a;
  if (gelu) {
    const float k = 0.7978845608028654f;  // sqrt(2/pi): gelu_pytorch_tanh
    a = 0.5f * g * (1.f + tanhf(k * (g + 0.044715f * g * g * g)));
  } else {
    a = g / (1.f + expf(-g));
  }
  out[i] = a * up[i];
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void bias_kernel(float* y, const float* bias, int64_t total, int64_t rows) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) y[i] += bias[i % rows];
}

__global__ void convert_kernel(const float* src, void* dst, int64_t n, bool to_half) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (to_half) static_cast<__half*>(dst)[i] = __float2half_rn(src[i]);
  else static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(src[i]);
}

}  // namespace

void rmsnorm(const float* x, int64_t rows, int64_t dim, const float* w, float eps, float* out, cudaStream_t s) {
  if (rows <= 0) return;
  launch(rmsnorm_kernel, unsigned(rows), kNormThreads, 0, s, x, dim, w, eps, out);
  BRISK_LAUNCH_CHECK();
}

void act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out, cudaStream_t s) {
  launch(act_mul_kernel, blocks_for(n, 256), 256, 0, s, gate, up, n, act == Activation::GeluTanh, out);
  BRISK_LAUNCH_CHECK();
}

void add(float* x, const float* y, int64_t n, cudaStream_t s) {
  launch(add_kernel, blocks_for(n, 256), 256, 0, s, x, y, n);
  BRISK_LAUNCH_CHECK();
}

void add_bias(float* y, const float* bias, int64_t n, int64_t rows, cudaStream_t s) {
  launch(bias_kernel, blocks_for(n * rows, 256), 256, 0, s, y, bias, n * rows, rows);
  BRISK_LAUNCH_CHECK();
}

void convert_activations(const float* src, void* dst, int64_t n, bool to_half, cudaStream_t s) {
  launch(convert_kernel, blocks_for(n, 256), 256, 0, s, src, dst, n, to_half);
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda

namespace brisk::cuda {
namespace {
__global__ void fill_random_kernel(__nv_bfloat16* p, uint64_t n, uint64_t seed) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + i;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  p[i] = __float2bfloat16_rn(float(z >> 40) * (2.f / 16777216.f) - 1.f);
}
}  // namespace

void fill_random(void* p, uint64_t n, uint64_t seed, cudaStream_t s) {
  fill_random_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed);
  BRISK_LAUNCH_CHECK();
}

bool has_kernel_image() {
  cudaFuncAttributes a{};
  const bool ok = cudaFuncGetAttributes(&a, add_kernel) == cudaSuccess;
  cudaGetLastError();
  return ok;
}
}  // namespace brisk::cuda
