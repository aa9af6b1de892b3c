// Choosing the backend a model runs on: "cpu", "cuda", "cuda:N", or "auto" (the first CUDA
// device when one works, else the CPU).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace brisk {

struct DeviceOptions {
  std::string device = "auto";
  int threads = 0;          // CPU threads (0: one per core)
  bool exact = false;       // CPU: float32 activations everywhere (the oracle)
};

// Throws brisk::Error naming the problem for a bad spec or an unusable GPU ("cuda"
// asked for explicitly); "auto" falls back to the CPU and says why in *note when given.
std::unique_ptr<Backend> make_backend(const DeviceOptions& opts, std::string* note = nullptr);

bool built_with_cuda();

}  // namespace brisk
