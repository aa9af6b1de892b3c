// Error handling and small device helpers shared by every CUDA source. A failing CUDA call
// becomes a brisk::Error naming the call and where it was made; kernels launch through
// BRISK_LAUNCH_CHECK so a bad launch configuration is reported at its launch site.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "base/error.hpp"

namespace brisk::cuda {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  ErrorCode code = (e == cudaErrorMemoryAllocation) ? ErrorCode::kLimit : ErrorCode::kInternal;
  throw Error(code, std::string("CUDA error in ") + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                        ") at " + file + ":" + std::to_string(line));
}

#define BRISK_CUDA_CHECK(call)                                                          \
  do {                                                                                  \
    cudaError_t brisk_e_ = (call);                                                      \
    if (brisk_e_ != cudaSuccess) ::brisk::cuda::throw_cuda(brisk_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define BRISK_LAUNCH_CHECK() BRISK_CUDA_CHECK(cudaGetLastError())

inline unsigned blocks_for(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The MLP's activations: SiLU, or GELU with the tanh approximation (gelu_pytorch_tanh).
__device__ __forceinline__ float activate(float g, bool gelu) {
  if (gelu) return 0.5f * g * (1.f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g)));
  return g / (1.f + expf(-g));
}

__device__ __forceinline__ float f16_bits_to_float(uint16_t b) { return __half2float(__ushort_as_half(b)); }

}  // namespace brisk::cuda
