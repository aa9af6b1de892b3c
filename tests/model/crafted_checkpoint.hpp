// Crafted variants of a checkpoint for the load-error tests: a GGUF file copied with some
// metadata keys replaced, added or dropped (and tensors filtered), or an HF directory with one
// JSON file edited. Made at test time from synthetic checkpoints or the installed Gemma file,
// so CI needs no extra fixtures.
#pragma once

#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/checkpoint.hpp"
#include "format/gguf_writer.hpp"

namespace brisk::test {

// nullopt drops the key.
using MetaEdits = std::map<std::string, std::optional<MetaValue>>;

// A scalar of any numeric type (bool counts as unsigned).
inline MetaValue meta_number(MetaType type, double v) {
  MetaValue m;
  m.type = type;
  if (type == MetaType::F32 || type == MetaType::F64) m.f = v;
  else if (type == MetaType::I8 || type == MetaType::I16 || type == MetaType::I32 || type == MetaType::I64) m.i = int64_t(v);
  else m.u = uint64_t(v);
  return m;
}
inline MetaValue meta_f32(float v) { return meta_number(MetaType::F32, v); }
inline MetaValue meta_u32(uint32_t v) { return meta_number(MetaType::U32, v); }
inline MetaValue meta_i32(int32_t v) { return meta_number(MetaType::I32, v); }
inline MetaValue meta_u64(uint64_t v) { return meta_number(MetaType::U64, double(v)); }
inline MetaValue meta_bool(bool v) { return meta_number(MetaType::Bool, v); }

inline MetaValue meta_string(std::string v) {
  MetaValue m;
  m.type = MetaType::String;
  m.s = std::move(v);
  return m;
}

inline MetaValue meta_strings(std::vector<std::string> v) {
  MetaValue m;
  m.type = MetaType::Array;
  m.elem_type = MetaType::String;
  m.strs = std::move(v);
  return m;
}

inline MetaValue meta_numbers(MetaType elem, std::vector<double> v) {
  MetaValue m;
  m.type = MetaType::Array;
  m.elem_type = elem;
  m.nums = std::move(v);
  return m;
}

// Copies the GGUF file at src to dst with `edits` applied to its metadata; `keep` filters tensors.
inline void rewrite_gguf(const std::string& src, const std::string& dst, const MetaEdits& edits,
                         const std::function<bool(const std::string&)>& keep = {}) {
  auto c = open_checkpoint(src);
  GgufWriter w;
  for (const auto& [key, value] : c->metadata) {
    if (key == "general.alignment") continue;  // the writer records its own
    auto it = edits.find(key);
    if (it == edits.end()) w.add(key, value);
    else if (it->second) w.add(key, *it->second);
  }
  for (const auto& [key, value] : edits)
    if (value && !c->metadata.count(key)) w.add(key, *value);
  for (const auto& t : c->tensors)
    if (!keep || keep(t.name)) w.add_tensor(t.name, t.dtype, t.shape, std::span<const uint8_t>(t.data, t.nbytes));
  w.write(dst);
}

// The metadata of a GGUF file, to derive edits from (token lists, counts).
inline std::map<std::string, MetaValue> gguf_metadata(const std::string& path) {
  return open_checkpoint(path)->metadata;
}

inline nlohmann::json read_json_file(const std::string& path) { return nlohmann::json::parse(std::ifstream(path)); }

inline void write_json_file(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(); }

// Edits one JSON file of an HF directory in place.
inline void edit_json(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  auto j = read_json_file(path);
  edit(j);
  write_json_file(path, j);
}

}  // namespace brisk::test
