// The KV cache's elements on the GPU: float32 in the exact mode (the oracle's values), bf16
// in the fast mode, where decode attention at batch is bound by reading the cache and half
// the bytes is half the time. Kernels that write or read the cache are templates on the
// element type C; with_kv_elems types a cache's arrays for the launch.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cuda/mma.cuh"

namespace brisk::cuda {

__device__ __forceinline__ void store_kv(float* p, float x) { *p = x; }
__device__ __forceinline__ void store_kv(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

__device__ __forceinline__ float load_kv(const float* p) { return __ldg(p); }
__device__ __forceinline__ float load_kv(const __nv_bfloat16* p) {
  return __uint_as_float(uint32_t(__ldg(reinterpret_cast<const unsigned short*>(p))) << 16);
}

// 16 bytes of cache row (kKvVec<C> elements) as bf16 in shared memory; zeros where !valid.
template <typename C>
inline constexpr int kKvVec = int(16 / sizeof(C));

__device__ __forceinline__ void kv_to_smem(__nv_bfloat16* dst, const float* src, bool valid) {
  float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
  if (valid) x = __ldg(reinterpret_cast<const float4*>(src));
  *reinterpret_cast<uint2*>(dst) = make_uint2(pack_bf16(x.x, x.y), pack_bf16(x.z, x.w));
}
__device__ __forceinline__ void kv_to_smem(__nv_bfloat16* dst, const __nv_bfloat16* src, bool valid) {
  uint4 x = make_uint4(0u, 0u, 0u, 0u);
  if (valid) x = __ldg(reinterpret_cast<const uint4*>(src));
  *reinterpret_cast<uint4*>(dst) = x;
}

// Calls f(k, v) with the cache's arrays as pointers to their element type.
template <typename F>
void with_kv_elems(const KvCache& kv, F&& f) {
  if (kv.elem_bytes == 2) f(static_cast<__nv_bfloat16*>(kv.k), static_cast<__nv_bfloat16*>(kv.v));
  else f(static_cast<float*>(kv.k), static_cast<float*>(kv.v));
}

}  // namespace brisk::cuda
