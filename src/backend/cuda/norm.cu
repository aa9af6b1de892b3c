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

// Four floats as bf16 at an 8-byte aligned place (the copy a following GEMM reads).
__device__ __forceinline__ void store_bf16x4(__nv_bfloat16* dst, float4 v) {
  const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
  uint2 packed;
  packed.x = *reinterpret_cast<const uint32_t*>(&a);
  packed.y = *reinterpret_cast<const uint32_t*>(&b);
  *reinterpret_cast<uint2*>(dst) = packed;
}

// The same for rows of dim % 4 == 0 values, at most 4 * V * kNormThreads: each thread holds
// its V float4 in registers, so every load is issued at once instead of one per loop trip.
template <int V>
__global__ void rmsnorm_vec_kernel(const float* x, int64_t dim, const float* __restrict__ w, float eps, float* out,
                                   __nv_bfloat16* out16) {
  pdl_wait();
  pdl_launch_dependents();
  const int n4 = int(dim / 4);
  const float4* xr = reinterpret_cast<const float4*>(x + int64_t(blockIdx.x) * dim);
  float4 v[V];
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = threadIdx.x + k * kNormThreads;
    v[k] = i < n4 ? xr[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    ss += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
  }
  __shared__ float part[kNormThreads / 32];
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kNormThreads / 32; ++i) total += part[i];
  const float inv = rsqrtf(total / float(dim) + eps);
  float4* o = reinterpret_cast<float4*>(out + int64_t(blockIdx.x) * dim);
  const float4* w4 = reinterpret_cast<const float4*>(w);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = threadIdx.x + k * kNormThreads;
    if (i < n4) {
      const float4 g = w4[i];
      const float4 r = make_float4(v[k].x * inv * g.x, v[k].y * inv * g.y, v[k].z * inv * g.z, v[k].w * inv * g.w);
      o[i] = r;
      if (out16) store_bf16x4(out16 + int64_t(blockIdx.x) * dim + 4 * i, r);
    }
  }
}

// The elementwise kernels take 4 values per thread (16-byte accesses) where the buffers
// allow (vec4), else one.
__device__ __forceinline__ int64_t first_of(bool vec4) {
  return (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * (vec4 ? 4 : 1);
}

__global__ void act_mul_kernel(const float* gate, const float* up, int64_t n, bool gelu, float* out, bool vec4,
                               __nv_bfloat16* out16) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = first_of(vec4);
  if (vec4 && i + 4 <= n) {
    const float4 g = *reinterpret_cast<const float4*>(gate + i), u = *reinterpret_cast<const float4*>(up + i);
    const float4 r =
        make_float4(activate(g.x, gelu) * u.x, activate(g.y, gelu) * u.y, activate(g.z, gelu) * u.z, activate(g.w, gelu) * u.w);
    *reinterpret_cast<float4*>(out + i) = r;
    if (out16) store_bf16x4(out16 + i, r);
    return;
  }
  for (int64_t j = i; j < min(n, i + (vec4 ? 4 : 1)); ++j) {
    out[j] = activate(gate[j], gelu) * up[j];
    if (out16) out16[j] = __float2bfloat16_rn(out[j]);
  }
}

__global__ void add_kernel(float* x, const float* y, int64_t n, bool vec4) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = first_of(vec4);
  if (vec4 && i + 4 <= n) {
    float4 a = *reinterpret_cast<const float4*>(x + i);
    const float4 b = *reinterpret_cast<const float4*>(y + i);
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    *reinterpret_cast<float4*>(x + i) = a;
    return;
  }
  for (int64_t j = i; j < min(n, i + (vec4 ? 4 : 1)); ++j) x[j] += y[j];
}

__global__ void bias_kernel(float* y, const float* bias, int64_t total, int64_t rows, bool vec4) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = first_of(vec4);
  if (vec4 && i + 4 <= total) {  // rows % 4 == 0: the four share a row
    float4 a = *reinterpret_cast<const float4*>(y + i);
    const float4 b = *reinterpret_cast<const float4*>(bias + i % rows);
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    *reinterpret_cast<float4*>(y + i) = a;
    return;
  }
  for (int64_t j = i; j < min(total, i + (vec4 ? 4 : 1)); ++j) y[j] += bias[j % rows];
}

// One thread per 4 columns of y when every part's width is a multiple of 4, else one per column.
__global__ void split_rows_kernel(const float* y, int64_t n, int64_t total, RowSplit parts, bool vec4) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = first_of(vec4);
  if (i >= n * total) return;
  const int64_t r = i / total;
  int64_t c = i % total;
  int p = 0;
  while (p + 1 < parts.count && c >= parts.rows[p]) c -= parts.rows[p++];
  float* out = parts.outs[p] + r * parts.rows[p] + c;
  const float* b = parts.biases[p];
  if (vec4) {
    float4 v = *reinterpret_cast<const float4*>(y + i);
    if (b) v.x += b[c], v.y += b[c + 1], v.z += b[c + 2], v.w += b[c + 3];
    *reinterpret_cast<float4*>(out) = v;
  } else {
    *out = y[i] + (b ? b[c] : 0.f);
  }
}

__global__ void convert_kernel(const float* src, void* dst, int64_t n, bool to_half, bool vec4) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = first_of(vec4);
  if (vec4 && i + 4 <= n) {
    const float4 v = *reinterpret_cast<const float4*>(src + i);
    uint2 packed;
    if (to_half) {
      const __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
      packed = make_uint2(*reinterpret_cast<const uint32_t*>(&a), *reinterpret_cast<const uint32_t*>(&b));
    } else {
      const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
      packed = make_uint2(*reinterpret_cast<const uint32_t*>(&a), *reinterpret_cast<const uint32_t*>(&b));
    }
    *reinterpret_cast<uint2*>(static_cast<uint16_t*>(dst) + i) = packed;
    return;
  }
  for (int64_t j = i; j < min(n, i + (vec4 ? 4 : 1)); ++j) {
    if (to_half) static_cast<__half*>(dst)[j] = __float2half_rn(src[j]);
    else static_cast<__nv_bfloat16*>(dst)[j] = __float2bfloat16_rn(src[j]);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Threads for n values, four to a thread when vec4.
unsigned elementwise_blocks(int64_t n, bool vec4) { return blocks_for(vec4 ? (n + 3) / 4 : n, 256); }

}  // namespace

bool rmsnorm(const float* x, int64_t rows, int64_t dim, const float* w, float eps, float* out, cudaStream_t s,
             __nv_bfloat16* out16) {
  if (rows <= 0) return false;
  const int64_t per_thread = (dim / 4 + kNormThreads - 1) / kNormThreads;
  const bool vec = dim % 4 == 0 && aligned16(x) && aligned16(w) && aligned16(out) &&
                   reinterpret_cast<uintptr_t>(out16) % 8 == 0;
  if (vec && per_thread <= 1) launch(rmsnorm_vec_kernel<1>, unsigned(rows), kNormThreads, 0, s, x, dim, w, eps, out, out16);
  else if (vec && per_thread <= 2) launch(rmsnorm_vec_kernel<2>, unsigned(rows), kNormThreads, 0, s, x, dim, w, eps, out, out16);
  else if (vec && per_thread <= 4) launch(rmsnorm_vec_kernel<4>, unsigned(rows), kNormThreads, 0, s, x, dim, w, eps, out, out16);
  else if (vec && per_thread <= 8) launch(rmsnorm_vec_kernel<8>, unsigned(rows), kNormThreads, 0, s, x, dim, w, eps, out, out16);
  else launch(rmsnorm_kernel, unsigned(rows), kNormThreads, 0, s, x, dim, w, eps, out);
  BRISK_LAUNCH_CHECK();
  return vec && per_thread <= 8 && out16;
}

void act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out, cudaStream_t s,
             __nv_bfloat16* out16) {
  const bool vec4 = aligned16(gate) && aligned16(up) && aligned16(out) && reinterpret_cast<uintptr_t>(out16) % 8 == 0;
  launch(act_mul_kernel, elementwise_blocks(n, vec4), 256, 0, s, gate, up, n, act == Activation::GeluTanh, out, vec4,
         out16);
  BRISK_LAUNCH_CHECK();
}

void add(float* x, const float* y, int64_t n, cudaStream_t s) {
  const bool vec4 = aligned16(x) && aligned16(y);
  launch(add_kernel, elementwise_blocks(n, vec4), 256, 0, s, x, y, n, vec4);
  BRISK_LAUNCH_CHECK();
}

void add_bias(float* y, const float* bias, int64_t n, int64_t rows, cudaStream_t s) {
  const bool vec4 = rows % 4 == 0 && aligned16(y) && aligned16(bias);
  launch(bias_kernel, elementwise_blocks(n * rows, vec4), 256, 0, s, y, bias, n * rows, rows, vec4);
  BRISK_LAUNCH_CHECK();
}

void split_rows(const float* y, int64_t n, const RowSplit& parts, cudaStream_t s) {
  int64_t total = 0;
  bool vec4 = aligned16(y);
  for (int i = 0; i < parts.count; ++i) {
    total += parts.rows[i];
    vec4 &= parts.rows[i] % 4 == 0 && aligned16(parts.outs[i]);
  }
  launch(split_rows_kernel, elementwise_blocks(n * total, vec4), 256, 0, s, y, n, total, parts, vec4);
  BRISK_LAUNCH_CHECK();
}

void convert_activations(const float* src, void* dst, int64_t n, bool to_half, cudaStream_t s) {
  const bool vec4 = aligned16(src) && reinterpret_cast<uintptr_t>(dst) % 8 == 0;
  launch(convert_kernel, elementwise_blocks(n, vec4), 256, 0, s, src, dst, n, to_half, vec4);
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
