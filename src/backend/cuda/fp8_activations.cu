// Activations for the FP8 tensor-core GEMM (gemm.hpp, run_fp8): each token's row, or each
// group of columns of it, divided by a scale and rounded to E4M3 (nearest even, saturating),
// with the arithmetic of quant/fp8.cpp's quantize_row_fp8 (scale max|x| / 448, 1 for an all-
// zero group) so that the CPU oracle can round its input the same way; or by a static scale
// (compressed-tensors' input_scale). Also the rounding alone, for the products that read
// float activations of a weight with a static scale, and the bf16-output epilogue.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "backend/cuda/kernels.cuh"
#include "base/error.hpp"

namespace brisk::cuda {
namespace {

__device__ __forceinline__ uint8_t to_e4m3(float v) {
  return uint8_t(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

__device__ __forceinline__ float from_e4m3(uint8_t v) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(v), __NV_E4M3);
  return __half2float(__half(h));
}

// The block's max |x| over x[0, len) (blockDim.x a multiple of 32, at most 1024).
__device__ float block_absmax(const float* x, int64_t len) {
  float m = 0.f;
  for (int64_t i = threadIdx.x * 4; i < len; i += blockDim.x * 4) {
    const float4 v = *reinterpret_cast<const float4*>(x + i);
    m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  __shared__ float warp_max[32];
  if (blockDim.x == 32) return m;
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  m = 0.f;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) m = fmaxf(m, warp_max[w]);
  return m;
}

// Block (g, t): group g of token t's row, group columns wide (the last one may be shorter).
__global__ void quantize_fp8_kernel(const float* x, int64_t cols, int64_t group, float static_scale,
                                    Fp8Activations out) {
  pdl_wait();
  const int64_t t = blockIdx.y, g = blockIdx.x;
  const int64_t begin = g * group, len = min(group, cols - begin);
  const float* row = x + t * cols + begin;
  float scale = static_scale;
  if (scale <= 0.f) {
    const float amax = block_absmax(row, len);
    scale = amax > 0.f ? amax / 448.f : 1.f;
  }
  uint8_t* q = out.q + t * cols + begin;
  for (int64_t i = threadIdx.x * 4; i < len; i += blockDim.x * 4) {
    const float4 v = *reinterpret_cast<const float4*>(row + i);
    const uint32_t packed = uint32_t(to_e4m3(v.x / scale)) | uint32_t(to_e4m3(v.y / scale)) << 8 |
                            uint32_t(to_e4m3(v.z / scale)) << 16 | uint32_t(to_e4m3(v.w / scale)) << 24;
    *reinterpret_cast<uint32_t*>(q + i) = packed;
  }
  if (threadIdx.x == 0) out.scales[g * out.group_stride + t * out.token_stride] = scale;
}

__global__ void round_through_fp8_kernel(const float* x, int64_t count, float scale, float* out) {
  pdl_wait();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_e4m3(to_e4m3(x[i] / scale)) * scale;
}

__global__ void add_bf16_kernel(const __nv_bfloat16* src, float* y, int64_t count, bool accumulate) {
  pdl_wait();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = (accumulate ? y[i] : 0.f) + __bfloat162float(src[i]);
}

unsigned grid_for(int64_t count) { return unsigned(std::min<int64_t>((count + 255) / 256, 4096)); }

}  // namespace

void quantize_fp8_activations(const float* x, int64_t n, int64_t cols, int64_t group, float static_scale,
                              const Fp8Activations& out, cudaStream_t s) {
  if (cols % 4 != 0 || group % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0)
    throw Error(ErrorCode::kInternal, "FP8 activations need rows of a multiple of 4 floats, 16-byte aligned");
  const int64_t groups = (cols + group - 1) / group;
  const int threads = int(std::min<int64_t>(256, ((group / 4 + 31) / 32) * 32));
  launch(quantize_fp8_kernel, dim3(unsigned(groups), unsigned(n)), threads, 0, s, x, cols, group, static_scale, out);
  BRISK_LAUNCH_CHECK();
}

void round_through_fp8(const float* x, int64_t count, float scale, float* out, cudaStream_t s) {
  launch(round_through_fp8_kernel, grid_for(count), 256, 0, s, x, count, scale, out);
  BRISK_LAUNCH_CHECK();
}

void add_bf16(const void* src, float* y, int64_t count, bool accumulate, cudaStream_t s) {
  launch(add_bf16_kernel, grid_for(count), 256, 0, s, static_cast<const __nv_bfloat16*>(src), y, count, accumulate);
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda
