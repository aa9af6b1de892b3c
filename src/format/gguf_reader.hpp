// GGUF reader: turns one mapped GGUF v2/v3 file into typed metadata plus a tensor table whose
// data pointers point into the map. The caps below are checked before anything is allocated,
// so a hostile header cannot make the reader allocate or read more than the file justifies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "format/checkpoint.hpp"

namespace brisk::gguf {

inline constexpr uint32_t kMagic = 0x46554747;          // "GGUF" read as little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxAlignment = 1u << 20;      // 1 MiB
inline constexpr uint64_t kMaxKeyLen = 64u << 10;        // 64 KiB
inline constexpr uint64_t kMaxStringLen = 16u << 20;     // 16 MiB per string value
inline constexpr uint64_t kMaxTensorNameLen = 64u << 10;
inline constexpr uint64_t kMaxArrayLen = 16u << 20;      // elements in one array (vocab: 262144)
inline constexpr uint64_t kMaxNestedArrayLen = 1u << 20; // arrays of arrays cost far more each
inline constexpr uint64_t kMaxMetaElements = 64u << 20;  // array elements summed over the file
inline constexpr int kMaxArrayDepth = 4;
inline constexpr uint64_t kMaxKv = 65536;
inline constexpr uint64_t kMaxTensors = 1u << 20;
inline constexpr uint32_t kMaxDims = 4;                  // GGML_MAX_DIMS

// Parses `file` into `out`: fills metadata and appends tensors, and keeps the map alive in
// out.files. Throws brisk::Error naming the file and byte offset of the first problem.
void read_gguf(const std::shared_ptr<MappedFile>& file, CheckpointIndex& out);

// Opens and parses a GGUF file (format "gguf").
std::unique_ptr<CheckpointIndex> open_gguf(const std::string& path);

// "Q2_K" for a ggml type id brisk may not support, "type 99" for one nobody knows.
std::string ggml_type_name(uint32_t id);

}  // namespace brisk::gguf
