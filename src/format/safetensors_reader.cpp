// safetensors parser. The JSON header is parsed by nlohmann (its errors become Error kFormat);
// everything the header claims is then checked against the file before a pointer is formed.
#include "format/safetensors_reader.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace brisk::safetensors {
namespace {

struct Entry {
  TensorInfo info;
  uint64_t begin = 0, end = 0;
};

uint64_t header_u64(const nlohmann::json& j, const std::string& tensor, const char* field,
                    const std::string& where) {
  if (!j.is_number_unsigned()) {
    std::string got = j.dump();
    if (got.size() > 40) got = got.substr(0, 40) + "...";
    throw Error(ErrorCode::kFormat,
                "tensor '" + tensor + "': " + field + " must hold non-negative integers, got " + got,
                where);
  }
  return j.get<uint64_t>();
}

Entry parse_entry(const std::string& name, const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    throw Error(ErrorCode::kFormat, "tensor '" + name + "' entry is not a JSON object", where);
  auto dt = j.find("dtype");
  auto shape = j.find("shape");
  auto offs = j.find("data_offsets");
  if (dt == j.end() || !dt->is_string())
    throw Error(ErrorCode::kFormat, "tensor '" + name + "' has no string 'dtype'", where);
  if (shape == j.end() || !shape->is_array())
    throw Error(ErrorCode::kFormat, "tensor '" + name + "' has no array 'shape'", where);
  if (offs == j.end() || !offs->is_array() || offs->size() != 2)
    throw Error(ErrorCode::kFormat, "tensor '" + name + "' needs 'data_offsets' [begin, end]", where);

  Entry e;
  e.info.name = name;
  std::string dname = dt->get<std::string>();
  std::optional<DType> dtype = dtype_from_safetensors(dname);
  if (!dtype)
    throw Error(ErrorCode::kUnsupported,
                "tensor '" + name + "' has dtype '" + dname + "' (brisk reads F32, F16, BF16 and F8_E4M3)",
                where);
  e.info.dtype = *dtype;
  if (shape->size() > kMaxRank)
    throw Error(ErrorCode::kLimit,
                "tensor '" + name + "' has rank " + std::to_string(shape->size()) + " (cap " +
                    std::to_string(kMaxRank) + ")",
                where);
  uint64_t numel = 1;
  for (const auto& d : *shape) {
    uint64_t v = header_u64(d, name, "shape", where);
    if (v > uint64_t(INT64_MAX) || __builtin_mul_overflow(numel, v, &numel) || numel > uint64_t(INT64_MAX))
      throw Error(ErrorCode::kFormat, "tensor '" + name + "' element count overflows", where);
    e.info.shape.push_back(int64_t(v));
  }
  e.begin = header_u64((*offs)[0], name, "data_offsets", where);
  e.end = header_u64((*offs)[1], name, "data_offsets", where);
  if (e.end < e.begin)
    throw Error(ErrorCode::kFormat,
                "tensor '" + name + "' data_offsets end " + std::to_string(e.end) + " < begin " +
                    std::to_string(e.begin),
                where);
  std::optional<uint64_t> nbytes = dtype_bytes(e.info.dtype, numel);
  if (!nbytes || *nbytes != e.end - e.begin)
    throw Error(ErrorCode::kFormat,
                "tensor '" + name + "' shape x dtype size (" +
                    (nbytes ? std::to_string(*nbytes) : std::string("overflow")) +
                    " bytes) does not match its data_offsets range (" +
                    std::to_string(e.end - e.begin) + " bytes)",
                where);
  e.info.nbytes = *nbytes;
  return e;
}

}  // namespace

std::optional<DType> dtype_from_safetensors(const std::string& name) {
  if (name == "F32") return DType::F32;
  if (name == "F16") return DType::F16;
  if (name == "BF16") return DType::BF16;
  if (name == "F8_E4M3") return DType::F8_E4M3;
  return std::nullopt;
}

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::F8_E4M3: return "F8_E4M3";
    default: break;
  }
  throw Error(ErrorCode::kUnsupported,
              std::string("safetensors cannot hold dtype ") + dtype_name(dtype) + " (F32, F16, BF16, F8_E4M3 only)");
}

void read_safetensors(const std::shared_ptr<MappedFile>& file, CheckpointIndex& out) {
  const std::string& path = file->path();
  const uint64_t size = file->size();
  if (size < 8)
    throw Error(ErrorCode::kFormat,
                "truncated file: " + std::to_string(size) + " bytes, too short for the 8-byte header length",
                at_offset(path, 0));
  uint64_t n;
  std::memcpy(&n, file->data(), 8);
  if (n > kMaxHeaderLen)
    throw Error(ErrorCode::kLimit,
                "header length " + std::to_string(n) + " exceeds the cap of " + std::to_string(kMaxHeaderLen),
                at_offset(path, 0));
  if (n > size - 8)
    throw Error(ErrorCode::kFormat,
                "header length " + std::to_string(n) + " runs past the end of the file (" +
                    std::to_string(size) + " bytes)",
                at_offset(path, 0));
  const std::string where = at_offset(path, 8);
  const char* hdr = reinterpret_cast<const char*>(file->data() + 8);

  // Collect top-level keys while parsing: nlohmann keeps only the last of duplicates.
  std::set<std::string> keys;
  std::string duplicate;
  nlohmann::json::parser_callback_t cb = [&](int depth, nlohmann::json::parse_event_t ev,
                                             nlohmann::json& parsed) {
    if (depth == 1 && ev == nlohmann::json::parse_event_t::key && duplicate.empty()) {
      std::string k = parsed.get<std::string>();
      if (!keys.insert(k).second) duplicate = k;
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(hdr, hdr + n, cb);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kFormat, std::string("header is not valid JSON: ") + e.what(), where);
  }
  if (!j.is_object()) throw Error(ErrorCode::kFormat, "header is not a JSON object", where);
  if (!duplicate.empty())
    throw Error(ErrorCode::kFormat, "duplicate tensor name '" + duplicate + "' in the header", where);

  std::vector<Entry> entries;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        throw Error(ErrorCode::kFormat, "__metadata__ must be an object of strings", where);
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          throw Error(ErrorCode::kFormat, "__metadata__ value '" + m.key() + "' is not a string", where);
        MetaValue v;
        v.type = MetaType::String;
        v.s = m->get<std::string>();
        out.metadata["safetensors." + m.key()] = std::move(v);
      }
      continue;
    }
    if (it.key().empty()) throw Error(ErrorCode::kFormat, "empty tensor name in the header", where);
    entries.push_back(parse_entry(it.key(), *it, where));
  }

  // Sorted ranges must tile the data section exactly: no gaps, no overlaps, no tail.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_start = 8 + n;
  const uint64_t data_len = size - data_start;
  uint64_t expected = 0;
  const std::string* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin != expected)
      throw Error(ErrorCode::kFormat,
                  "tensor '" + e.info.name + "' begins at data offset " + std::to_string(e.begin) +
                      (e.begin < expected ? ", overlapping " : ", leaving a gap after ") +
                      (prev ? "'" + *prev + "'" : std::string("the start")) + " (expected " +
                      std::to_string(expected) + ")",
                  where);
    if (e.end > data_len)
      throw Error(ErrorCode::kFormat,
                  "tensor '" + e.info.name + "' data [" + std::to_string(e.begin) + ", " +
                      std::to_string(e.end) + ") runs past the end of the file (data section has " +
                      std::to_string(data_len) + " bytes)",
                  where);
    expected = e.end;
    prev = &e.info.name;
  }
  if (expected != data_len)
    throw Error(ErrorCode::kFormat,
                "tensors cover " + std::to_string(expected) + " bytes but the data section has " +
                    std::to_string(data_len) + " (trailing or missing bytes)",
                where);

  for (Entry& e : entries) {
    e.info.file = path;
    e.info.file_offset = data_start + e.begin;
    e.info.data = file->data() + e.info.file_offset;
    out.tensors.push_back(std::move(e.info));
  }
  out.files.push_back(file);
}

std::unique_ptr<CheckpointIndex> open_safetensors(const std::string& path) {
  auto index = std::make_unique<CheckpointIndex>();
  index->format = "safetensors";
  index->path = path;
  read_safetensors(std::make_shared<MappedFile>(path), *index);
  index->reindex();
  return index;
}

}  // namespace brisk::safetensors
