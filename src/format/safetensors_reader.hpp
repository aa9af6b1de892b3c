// safetensors reader: an 8-byte little-endian header length, a JSON header naming each
// tensor's dtype, shape and [begin, end) within the data that follows, then the data. We
// validate as the reference Rust validator does: capped header, shape x dtype size equal to
// the byte range, ranges sorted, contiguous from 0, non-overlapping and covering the data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "format/checkpoint.hpp"

namespace brisk::safetensors {

inline constexpr uint64_t kMaxHeaderLen = 100u << 20;  // 100 MiB, as the Rust crate caps it
inline constexpr size_t kMaxRank = 8;

// "F32", "F16", "BF16" <-> DType; the other safetensors dtypes are not supported.
std::optional<DType> dtype_from_safetensors(const std::string& name);
const char* safetensors_dtype_name(DType dtype);  // throws Error(kUnsupported) for others

// Parses `file`, appending its tensors to out.tensors and its `__metadata__` entries to
// out.metadata as strings under "safetensors.<key>"; keeps the map alive in out.files.
void read_safetensors(const std::shared_ptr<MappedFile>& file, CheckpointIndex& out);

// One .safetensors file on its own (format "safetensors", no config).
std::unique_ptr<CheckpointIndex> open_safetensors(const std::string& path);

}  // namespace brisk::safetensors
