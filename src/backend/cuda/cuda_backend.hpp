// The CUDA backend: the Backend ops on an NVIDIA GPU, weights resident in their formats
// (formats.cuh), decode on weight-streaming GEMVs, prefill on cuBLASLt and tensor-core
// flash attention, steps capturable as CUDA graphs. Only this header and backend.hpp are
// seen by the rest of brisk.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace brisk {

struct CudaOptions {
  // float32 operands in prefill GEMMs and attention too (slower; for comparisons with the
  // CPU oracle), instead of bf16 tensor cores.
  bool exact = false;
  bool float_decode_attention = false;  // the fast mode's decode attention on the float kernel
  bool pdl = true;                      // programmatic dependent launch on sm_90+
  bool mmq = true;                      // int8 (9..64 tokens) and FP8 tensor cores for quantized batches (else dequantize)
};

// Opens GPU `device` after checking it: a driver new enough for this build, compute
// capability 7.5 or newer, and machine code for it in this binary. Throws brisk::Error
// (kUnsupported) saying what is missing.
std::unique_ptr<Backend> make_cuda_backend(int device, const CudaOptions& options = {});

// Number of CUDA devices the driver reports (0 when there is no driver or device).
int cuda_device_count();
// What the driver says of the GPUs, for brisk's device report.
struct CudaDevices {
  int driver_version = 0;   // CUDA version the driver supports (0: none)
  int runtime_version = 0;  // the runtime this build links
  std::string note;         // why none is usable, when none is
  struct Gpu {
    std::string name;
    int compute_capability = 0;
    uint64_t memory_bytes = 0;
    bool has_code = false;  // this binary carries code the GPU can run
  };
  std::vector<Gpu> gpus;
};
CudaDevices cuda_devices();
// The compute capability's major number of GPU `device` (0 when it cannot be read).
int cuda_compute_major(int device = 0);
// major * 10 + minor (89 for sm_89; 0 when it cannot be read).
int cuda_compute_capability(int device = 0);

}  // namespace brisk
