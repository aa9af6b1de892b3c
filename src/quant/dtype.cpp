#include "quant/dtype.hpp"

#include <algorithm>
#include <cctype>

#include "base/error.hpp"

namespace brisk {

static const DTypeTraits kTraits[] = {
    {DType::F32, "F32", 1, 4},
    {DType::F16, "F16", 1, 2},
    {DType::BF16, "BF16", 1, 2},
    {DType::Q8_0, "Q8_0", 32, 34},    // f16 scale + 32 x int8
    {DType::Q4_0, "Q4_0", 32, 18},    // f16 scale + 16 bytes of nibbles
    {DType::Q5_0, "Q5_0", 32, 22},    // f16 scale + 4 bytes of high bits + 16 bytes of nibbles
    {DType::Q4_K, "Q4_K", 256, 144},  // f16 d, dmin + 12 bytes of scales + 128 bytes of nibbles
    {DType::Q5_K, "Q5_K", 256, 176},  // as Q4_K + 32 bytes of high bits
    {DType::Q6_K, "Q6_K", 256, 210},  // 128 low nibbles + 64 high bits + 16 int8 scales + f16 d
    {DType::I8, "I8", 1, 1},          // int8; per-row float scales in <name>_scale
    {DType::F8_E4M3, "F8_E4M3", 1, 1},  // fp8; float scales in <name>_scale
};

const DTypeTraits* dtype_traits(uint32_t ggml_type) {
  for (const auto& t : kTraits)
    if (uint32_t(t.type) == ggml_type) return &t;
  return nullptr;
}

const DTypeTraits& dtype_traits(DType type) {
  const DTypeTraits* t = dtype_traits(uint32_t(type));
  if (!t) throw Error(ErrorCode::kInternal, "dtype without traits: " + std::to_string(uint32_t(type)));
  return *t;
}

const char* dtype_name(DType type) { return dtype_traits(type).name; }

std::optional<DType> dtype_from_name(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const auto& t : kTraits)
    if (upper == t.name) return t.type;
  if (upper == "FP8" || upper == "FP8_E4M3" || upper == "F8") return DType::F8_E4M3;
  return std::nullopt;
}

std::optional<uint64_t> dtype_bytes(DType type, uint64_t n_elems) {
  const DTypeTraits& t = dtype_traits(type);
  if (n_elems % t.block_elems != 0) return std::nullopt;
  uint64_t blocks = n_elems / t.block_elems;
  uint64_t bytes;
  if (__builtin_mul_overflow(blocks, uint64_t(t.block_bytes), &bytes)) return std::nullopt;
  return bytes;
}

}  // namespace brisk
