// CheckpointIndex: what a parser hands the model layer. Typed metadata plus a table of
// tensors whose bytes stay in a read-only memory map (no copy of the weights at load).
// GGUF files fill `metadata`; Hugging Face directories fill `hf_config` and the tokenizer
// paths. Shapes are outermost-first (PyTorch order): a weight [out, in] has `in` contiguous.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "quant/dtype.hpp"

namespace brisk {

// GGUF metadata value types, numbered as the GGUF spec numbers them.
enum class MetaType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

struct MetaValue {
  MetaType type = MetaType::U32;
  MetaType elem_type = MetaType::U32;  // arrays only
  uint64_t u = 0;                      // unsigned integers and bool
  int64_t i = 0;                       // signed integers
  double f = 0;                        // floats
  std::string s;                       // strings
  std::vector<std::string> strs;       // arrays of strings
  std::vector<double> nums;            // arrays of numbers or bools
  std::vector<MetaValue> items;        // arrays of arrays

  bool is_array() const { return type == MetaType::Array; }
  bool is_string() const { return type == MetaType::String; }
  bool is_number() const;           // any integer, float or bool scalar
  double as_f64() const;            // numeric scalar; throws Error otherwise
  int64_t as_i64() const;           // integral scalar (or integral float); throws otherwise
  const std::string& as_string() const;
  size_t array_size() const;
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // outermost first
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  std::string file;            // which file holds it (for error messages)
  uint64_t file_offset = 0;    // absolute offset of `data` in that file

  int64_t numel() const;
};

class CheckpointIndex {
 public:
  std::string format;  // "gguf", "hf" (a directory) or "safetensors" (one file, no config)
  std::string path;    // the file or directory opened
  std::map<std::string, MetaValue> metadata;  // GGUF key-values
  nlohmann::json hf_config;                   // HF config.json (null for GGUF)
  nlohmann::json hf_generation_config;        // HF generation_config.json if present
  nlohmann::json hf_tokenizer_config;         // HF tokenizer_config.json if present
  std::string hf_tokenizer_json_path;         // HF tokenizer.json if present
  std::vector<TensorInfo> tensors;
  std::vector<std::shared_ptr<MappedFile>> files;  // keeps the maps alive

  const TensorInfo* find(const std::string& name) const;  // nullptr when absent
  const MetaValue* meta(const std::string& key) const;    // nullptr when absent

  // Rebuilds the name lookup behind find(); throws Error(kFormat) on a duplicate tensor name.
  // The readers call it once, so find() on a loaded index never mutates (safe to share).
  void reindex();

 private:
  mutable std::map<std::string, size_t> by_name_;
};

// "[262144, 640]", for messages and listings.
std::string shape_string(const std::vector<int64_t>& shape);

// A GGUF file, a safetensors file, or a Hugging Face directory (config.json + model.safetensors
// or model.safetensors.index.json shards). Throws brisk::Error naming the file and offset.
std::unique_ptr<CheckpointIndex> open_checkpoint(const std::string& path);

}  // namespace brisk
