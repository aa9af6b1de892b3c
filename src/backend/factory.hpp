// Choosing and opening the backend a model runs on, from BackendOptions alone (no
// environment variables): "cpu", "cuda", "cuda:N", or "auto" (the first CUDA device when
// one works, else the CPU).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace brisk {

struct BackendOptions {
  std::string device = "auto";
  int threads = 0;              // CPU threads (0: one per core)
  bool exact = false;           // float32 everywhere (the oracle), on either backend
  // CUDA: "auto", or "float" to keep the fast mode's decode attention on the float kernel.
  std::string decode_attention = "auto";
  bool pdl = true;              // CUDA: programmatic dependent launch where the GPU has it
  bool mmq = true;              // CUDA: quantized decode batches on the integer tensor cores
};

// Throws brisk::Error naming the problem for a bad spec or an unusable GPU ("cuda" asked
// for explicitly); "auto" falls back to the CPU and says why in *note when given.
std::unique_ptr<Backend> make_backend(const BackendOptions& opts, std::string* note = nullptr);

bool built_with_cuda();
// CUDA devices the driver reports (0 without CUDA, a driver or a device).
int cuda_device_count();

}  // namespace brisk
