// The CheckpointIndex accessors and open_checkpoint, which picks a reader by what the path is:
// a directory (Hugging Face), a file with the GGUF magic, or a .safetensors file.
#include "format/checkpoint.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "format/gguf_reader.hpp"
#include "format/hf_dir.hpp"
#include "format/safetensors_reader.hpp"

namespace brisk {

namespace {

bool is_unsigned(MetaType t) {
  return t == MetaType::U8 || t == MetaType::U16 || t == MetaType::U32 || t == MetaType::U64;
}
bool is_signed(MetaType t) {
  return t == MetaType::I8 || t == MetaType::I16 || t == MetaType::I32 || t == MetaType::I64;
}
bool is_float(MetaType t) { return t == MetaType::F32 || t == MetaType::F64; }

}  // namespace

bool MetaValue::is_number() const {
  return is_unsigned(type) || is_signed(type) || is_float(type) || type == MetaType::Bool;
}

double MetaValue::as_f64() const {
  if (is_unsigned(type) || type == MetaType::Bool) return double(u);
  if (is_signed(type)) return double(i);
  if (is_float(type)) return f;
  throw Error(ErrorCode::kFormat, "metadata value is not a number");
}

int64_t MetaValue::as_i64() const {
  if (is_unsigned(type) || type == MetaType::Bool) {
    if (u > uint64_t(INT64_MAX)) throw Error(ErrorCode::kFormat, "metadata integer " + std::to_string(u) + " exceeds int64");
    return int64_t(u);
  }
  if (is_signed(type)) return i;
  // An integral float (some converters write counts as f32); the range check keeps the cast defined.
  if (is_float(type) && std::isfinite(f) && f == std::floor(f) && f >= -9.2233720368547e18 &&
      f <= 9.2233720368547e18)
    return int64_t(f);
  throw Error(ErrorCode::kFormat, "metadata value is not an integer");
}

const std::string& MetaValue::as_string() const {
  if (type != MetaType::String) throw Error(ErrorCode::kFormat, "metadata value is not a string");
  return s;
}

size_t MetaValue::array_size() const {
  if (type != MetaType::Array) throw Error(ErrorCode::kFormat, "metadata value is not an array");
  if (elem_type == MetaType::String) return strs.size();
  if (elem_type == MetaType::Array) return items.size();
  return nums.size();
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(ErrorCode::kFormat, "element count of tensor '" + name + "' overflows", file);
  return n;
}

void CheckpointIndex::reindex() {
  std::map<std::string, size_t> m;
  for (size_t k = 0; k < tensors.size(); ++k)
    if (!m.emplace(tensors[k].name, k).second)
      throw Error(ErrorCode::kFormat, "duplicate tensor name '" + tensors[k].name + "'", tensors[k].file);
  by_name_ = std::move(m);
}

const TensorInfo* CheckpointIndex::find(const std::string& name) const {
  // Lazily rebuilt only for an index assembled by hand; loaded indexes are already in sync.
  if (by_name_.size() != tensors.size()) {
    by_name_.clear();
    for (size_t k = 0; k < tensors.size(); ++k) by_name_.emplace(tensors[k].name, k);
  }
  auto it = by_name_.find(name);
  if (it == by_name_.end() || it->second >= tensors.size() || tensors[it->second].name != name)
    return nullptr;
  return &tensors[it->second];
}

const MetaValue* CheckpointIndex::meta(const std::string& key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

std::unique_ptr<CheckpointIndex> open_checkpoint(const std::string& path) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    throw Error(ErrorCode::kIo, "checkpoint not found", path);
  if (std::filesystem::is_directory(st)) return open_hf_dir(path);

  auto file = std::make_shared<MappedFile>(path);
  if (file->size() >= 4 && std::memcmp(file->data(), "GGUF", 4) == 0) {
    auto index = std::make_unique<CheckpointIndex>();
    index->format = "gguf";
    index->path = path;
    gguf::read_gguf(file, *index);
    index->reindex();
    return index;
  }
  if (path.size() >= 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0)
    return safetensors::open_safetensors(path);

  char magic[64] = "the file is shorter than 4 bytes";
  if (file->size() >= 4) {
    const uint8_t* d = file->data();
    std::snprintf(magic, sizeof magic, "bad magic %02x %02x %02x %02x", d[0], d[1], d[2], d[3]);
  }
  throw Error(ErrorCode::kFormat,
              std::string("unrecognised checkpoint (") + magic +
                  "): expected a GGUF file, a .safetensors file or a Hugging Face directory",
              path);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace brisk
