// Weight and activation element types, numbered as GGUF numbers them (ggml_type), and the
// table of their block layouts. Every size computation on tensor data goes through here
// with overflow checks, so parsers and kernels agree on how many bytes a row occupies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace brisk {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q5_0 = 6,
  Q8_0 = 8,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
  // brisk's packed int8: plain int8 values, one float32 scale per row in a companion tensor
  // named <weight>_scale. Not a ggml type: the id is outside ggml's range.
  I8 = 1024,
  // FP8 E4M3 (quant/fp8.hpp): one byte per value, with float32 scales in a companion tensor
  // (<weight>_scale per row, or per 128 x 128 block in Hugging Face's block-scaled layout).
  // Not a ggml type either.
  F8_E4M3 = 1025,
};

struct DTypeTraits {
  DType type;
  const char* name;       // "Q4_K", as GGUF tools print it
  uint32_t block_elems;   // elements per block (1 for plain floats)
  uint32_t block_bytes;   // bytes per block
};

// Traits of a type brisk supports, or nullptr for an unknown / unsupported ggml_type id.
const DTypeTraits* dtype_traits(uint32_t ggml_type);
const DTypeTraits& dtype_traits(DType type);
const char* dtype_name(DType type);
std::optional<DType> dtype_from_name(const std::string& name);  // "q4_k" or "Q4_K"

// Bytes of `n_elems` consecutive elements; nullopt when n_elems is not a whole number of
// blocks or the product overflows.
std::optional<uint64_t> dtype_bytes(DType type, uint64_t n_elems);

}  // namespace brisk
