// Kernel launches with programmatic dependent launch (PDL, sm_90+). A decode step is a chain
// of a few hundred short kernels; by default each one starts only after its predecessor has
// fully drained, and the gap (drain, launch, ramp-up) is a large part of a step. With PDL the
// next kernel may be scheduled while its predecessor finishes: it runs its prologue (a GEMV
// issues its first weight loads, which depend on nothing) and then waits in pdl_wait() until
// the predecessor has completed and its writes are visible.
//
// The contract: every kernel launched through launch() calls pdl_wait() before it reads
// anything an earlier kernel wrote and before it writes anything. Only reads of data that no
// kernel writes (weights) may come first. pdl_wait() is a no-op when the launch had no
// programmatic predecessor, and on GPUs before sm_90, where launch() does not set the attribute.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "backend/cuda/cuda_check.cuh"

namespace brisk::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream be scheduled now (it still waits in its pdl_wait()).
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launch() sets the PDL attribute; the backend turns it on for sm_90+ devices.
bool& pdl_enabled();
// Set by the backend from its options (process-wide, as there is one CUDA backend in use).
bool& float_decode_forced();

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  BRISK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace brisk::cuda
