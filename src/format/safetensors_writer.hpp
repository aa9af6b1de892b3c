// write_safetensors: writes a .safetensors file that the Python `safetensors` package and our
// reader both load. Used by `brisk gen-model` for synthetic HF directories and by tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "quant/dtype.hpp"

namespace brisk {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;     // F32, F16 or BF16
  std::vector<int64_t> shape;   // outermost first; may be empty (a scalar)
  std::vector<uint8_t> bytes;   // exactly numel x element size
};

// Writes tensors in the order given, contiguously, after a JSON header padded with spaces to a
// multiple of 8 bytes. Throws Error(kInvalidArgument) for a bad tensor, Error(kIo) on failure.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace brisk
