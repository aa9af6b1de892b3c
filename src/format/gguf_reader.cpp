// GGUF v2/v3 parser. Layout: magic, version, tensor count, kv count, the key-values, the
// tensor infos, padding to `general.alignment`, then the data section that tensor offsets are
// relative to. Each count, length, dim and offset is checked (caps first, then against the
// bytes left in the file, with overflow-safe arithmetic) before it is used.
#include "format/gguf_reader.hpp"

#include <algorithm>
#include <numeric>

#include "format/byte_cursor.hpp"

namespace brisk::gguf {
namespace {

const char* meta_type_name(MetaType t) {
  static const char* kNames[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                 "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) < 13 ? kNames[uint32_t(t)] : "?";
}

// Smallest encoding of one element, used to reject counts the remaining bytes cannot hold.
uint64_t min_encoded_size(MetaType t) {
  switch (t) {
    case MetaType::U8: case MetaType::I8: case MetaType::Bool: return 1;
    case MetaType::U16: case MetaType::I16: return 2;
    case MetaType::U32: case MetaType::I32: case MetaType::F32: return 4;
    case MetaType::U64: case MetaType::I64: case MetaType::F64: return 8;
    case MetaType::String: return 8;   // the length prefix
    case MetaType::Array: return 12;   // element type + count
  }
  return 1;
}

constexpr uint64_t kNestedArrayWeight = 16;

class Parser {
 public:
  explicit Parser(const MappedFile& f) : c_(f.data(), f.size(), f.path()) {}

  ByteCursor& cursor() { return c_; }

  MetaType read_type(const std::string& key) {
    uint64_t at = c_.pos();
    uint32_t t = c_.read<uint32_t>("metadata value type");
    if (t > uint32_t(MetaType::F64))
      throw c_.error(ErrorCode::kFormat,
                     "metadata key '" + key + "' has unknown value type " + std::to_string(t), at);
    return MetaType(t);
  }

  MetaValue read_value(MetaType t, const std::string& key, int depth) {
    MetaValue v;
    v.type = t;
    switch (t) {
      case MetaType::U8: v.u = c_.read<uint8_t>("u8 value"); break;
      case MetaType::U16: v.u = c_.read<uint16_t>("u16 value"); break;
      case MetaType::U32: v.u = c_.read<uint32_t>("u32 value"); break;
      case MetaType::U64: v.u = c_.read<uint64_t>("u64 value"); break;
      case MetaType::I8: v.i = c_.read<int8_t>("i8 value"); break;
      case MetaType::I16: v.i = c_.read<int16_t>("i16 value"); break;
      case MetaType::I32: v.i = c_.read<int32_t>("i32 value"); break;
      case MetaType::I64: v.i = c_.read<int64_t>("i64 value"); break;
      case MetaType::F32: v.f = c_.read<float>("f32 value"); break;
      case MetaType::F64: v.f = c_.read<double>("f64 value"); break;
      case MetaType::Bool: v.u = c_.read<uint8_t>("bool value") != 0; break;
      case MetaType::String: v.s = c_.read_string(kMaxStringLen, "string value"); break;
      case MetaType::Array: read_array(v, key, depth); break;
    }
    return v;
  }

  // One numeric or bool array element, widened to double as MetaValue::nums stores it.
  double read_number(MetaType t) {
    switch (t) {
      case MetaType::U8: return c_.read<uint8_t>("u8 element");
      case MetaType::U16: return c_.read<uint16_t>("u16 element");
      case MetaType::U32: return c_.read<uint32_t>("u32 element");
      case MetaType::U64: return double(c_.read<uint64_t>("u64 element"));
      case MetaType::I8: return c_.read<int8_t>("i8 element");
      case MetaType::I16: return c_.read<int16_t>("i16 element");
      case MetaType::I32: return c_.read<int32_t>("i32 element");
      case MetaType::I64: return double(c_.read<int64_t>("i64 element"));
      case MetaType::F32: return c_.read<float>("f32 element");
      case MetaType::F64: return c_.read<double>("f64 element");
      case MetaType::Bool: return c_.read<uint8_t>("bool element") != 0 ? 1.0 : 0.0;
      default: break;
    }
    throw Error(ErrorCode::kInternal, "read_number on a non-numeric type");
  }

  void read_array(MetaValue& v, const std::string& key, int depth) {
    uint64_t at = c_.pos();
    if (depth >= kMaxArrayDepth)
      throw c_.error(ErrorCode::kLimit,
                     "metadata key '" + key + "' nests arrays deeper than " +
                         std::to_string(kMaxArrayDepth),
                     at);
    v.elem_type = read_type(key);
    uint64_t n = c_.read<uint64_t>("array length");
    uint64_t cap = v.elem_type == MetaType::Array ? kMaxNestedArrayLen : kMaxArrayLen;
    if (n > cap)
      throw c_.error(ErrorCode::kLimit,
                     "metadata key '" + key + "': array length " + std::to_string(n) +
                         " exceeds the cap of " + std::to_string(cap),
                     at);
    // A nested array costs a whole MetaValue (~136 bytes) against 8 for a number: weigh it so.
    elements_ += v.elem_type == MetaType::Array ? n * kNestedArrayWeight : n;
    if (elements_ > kMaxMetaElements)
      throw c_.error(ErrorCode::kLimit,
                     "metadata arrays hold more than " + std::to_string(kMaxMetaElements) +
                         " elements in total",
                     at);
    // n <= 16M and the minimum size <= 12, so the product cannot overflow.
    c_.need(n * min_encoded_size(v.elem_type), "array elements");
    if (v.elem_type == MetaType::String) {
      v.strs.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.strs.push_back(c_.read_string(kMaxStringLen, "array string"));
    } else if (v.elem_type == MetaType::Array) {
      v.items.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.items.push_back(read_value(MetaType::Array, key, depth + 1));
    } else {
      v.nums.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.nums.push_back(read_number(v.elem_type));
    }
  }

 private:
  ByteCursor c_;
  uint64_t elements_ = 0;
};

uint32_t read_alignment(const CheckpointIndex& out, const std::string& path, uint64_t at) {
  const MetaValue* a = out.meta("general.alignment");
  if (!a) return kDefaultAlignment;
  bool integral = a->type == MetaType::U8 || a->type == MetaType::U16 ||
                  a->type == MetaType::U32 || a->type == MetaType::U64 ||
                  a->type == MetaType::I8 || a->type == MetaType::I16 ||
                  a->type == MetaType::I32 || a->type == MetaType::I64;
  if (!integral)
    throw Error(ErrorCode::kFormat,
                std::string("general.alignment must be an integer, not ") + meta_type_name(a->type),
                at_offset(path, at));
  int64_t v = a->as_i64();
  if (v <= 0 || v > int64_t(kMaxAlignment) || (v & (v - 1)) != 0)
    throw Error(ErrorCode::kFormat,
                "general.alignment " + std::to_string(v) + " is not a power of two in 1.." +
                    std::to_string(kMaxAlignment),
                at_offset(path, at));
  return uint32_t(v);
}

struct PendingTensor {
  TensorInfo info;
  uint64_t rel_offset;
  uint64_t info_at;  // where its offset field sits, for error messages
};

}  // namespace

std::string ggml_type_name(uint32_t id) {
  static const char* kNames[] = {
      "F32",     "F16",    "Q4_0",   "Q4_1",  "Q4_2",   "Q4_3",   "Q5_0",   "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",   "Q3_K",  "Q4_K",   "Q5_K",   "Q6_K",   "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",  "IQ2_S",  "IQ4_XS",
      "I8",      "I16",    "I32",    "I64",   "F64",    "IQ1_M",  "BF16",   "Q4_0_4_4",
      "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8",
      "MXFP4"};
  if (id < sizeof(kNames) / sizeof(kNames[0])) return kNames[id];
  return "type " + std::to_string(id);
}

void read_gguf(const std::shared_ptr<MappedFile>& file, CheckpointIndex& out) {
  const std::string& path = file->path();
  Parser p(*file);
  ByteCursor& c = p.cursor();

  uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kMagic) throw c.error(ErrorCode::kFormat, "not a GGUF file (bad magic)", 0);
  uint32_t version = c.read<uint32_t>("version");
  if (version == 1)
    throw c.error(ErrorCode::kUnsupported,
                  "GGUF version 1 is not supported (it predates 64-bit counts); "
                  "re-convert the model with a current llama.cpp",
                  4);
  if (version != 2 && version != 3) {
    bool swapped = (version & 0xffffu) == 0;  // 2 or 3 written big-endian
    throw c.error(ErrorCode::kUnsupported,
                  swapped ? "big-endian GGUF files are not supported"
                          : "GGUF version " + std::to_string(version) +
                                " is not supported (brisk reads versions 2 and 3)",
                  4);
  }

  uint64_t n_tensors = c.read<uint64_t>("tensor count");
  if (n_tensors > kMaxTensors)
    throw c.error(ErrorCode::kLimit,
                  "tensor count " + std::to_string(n_tensors) + " exceeds the cap of " +
                      std::to_string(kMaxTensors),
                  8);
  uint64_t n_kv = c.read<uint64_t>("metadata count");
  if (n_kv > kMaxKv)
    throw c.error(ErrorCode::kLimit,
                  "metadata count " + std::to_string(n_kv) + " exceeds the cap of " +
                      std::to_string(kMaxKv),
                  16);

  uint64_t alignment_at = 0;  // where general.alignment sits, for its error messages
  for (uint64_t k = 0; k < n_kv; ++k) {
    uint64_t at = c.pos();
    std::string key = c.read_string(kMaxKeyLen, "metadata key");
    if (key.empty()) throw c.error(ErrorCode::kFormat, "empty metadata key", at);
    if (out.metadata.count(key))
      throw c.error(ErrorCode::kFormat, "duplicate metadata key '" + key + "'", at);
    if (key == "general.alignment") alignment_at = at;
    MetaType t = p.read_type(key);
    out.metadata.emplace(key, p.read_value(t, key, 0));
  }
  uint32_t alignment = read_alignment(out, path, alignment_at);

  // Each tensor info takes at least 8 (name) + 4 (n_dims) + 8 (a dim) + 4 (type) + 8 (offset).
  std::vector<PendingTensor> pending;
  pending.reserve(std::min<uint64_t>(n_tensors, c.remaining() / 32));
  std::map<std::string, size_t> seen;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    uint64_t at = c.pos();
    PendingTensor pt;
    TensorInfo& t = pt.info;
    t.name = c.read_string(kMaxTensorNameLen, "tensor name");
    if (t.name.empty()) throw c.error(ErrorCode::kFormat, "empty tensor name", at);
    if (!seen.emplace(t.name, k).second)
      throw c.error(ErrorCode::kFormat, "duplicate tensor name '" + t.name + "'", at);
    uint64_t dims_at = c.pos();
    uint32_t n_dims = c.read<uint32_t>("tensor n_dims");
    if (n_dims == 0 || n_dims > kMaxDims)
      throw c.error(ErrorCode::kFormat,
                    "tensor '" + t.name + "' has n_dims " + std::to_string(n_dims) +
                        " (must be 1.." + std::to_string(kMaxDims) + ")",
                    dims_at);
    // GGUF lists ne[0] (innermost) first; TensorInfo wants outermost first.
    t.shape.assign(n_dims, 0);
    int64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim_at = c.pos();
      uint64_t ne = c.read<uint64_t>("tensor dim");
      if (ne == 0 || ne > uint64_t(INT64_MAX))
        throw c.error(ErrorCode::kFormat,
                      "tensor '" + t.name + "' dim " + std::to_string(d) + " is " +
                          std::to_string(ne) + " (must be positive)",
                      dim_at);
      if (__builtin_mul_overflow(numel, int64_t(ne), &numel))
        throw c.error(ErrorCode::kFormat,
                      "tensor '" + t.name + "' element count overflows (dims too large)", dim_at);
      t.shape[n_dims - 1 - d] = int64_t(ne);
    }
    uint64_t type_at = c.pos();
    uint32_t type_id = c.read<uint32_t>("tensor type");
    const DTypeTraits* tr = dtype_traits(type_id);
    if (!tr)
      throw c.error(ErrorCode::kUnsupported,
                    "tensor '" + t.name + "' has ggml type " + ggml_type_name(type_id) + " (id " +
                        std::to_string(type_id) + "), which brisk does not support",
                    type_at);
    t.dtype = tr->type;
    if (t.shape.back() % tr->block_elems != 0)
      throw c.error(ErrorCode::kFormat,
                    "tensor '" + t.name + "' row of " + std::to_string(t.shape.back()) +
                        " elements is not a whole number of " + tr->name + " blocks (" +
                        std::to_string(tr->block_elems) + ")",
                    type_at);
    std::optional<uint64_t> nbytes = dtype_bytes(t.dtype, uint64_t(numel));
    if (!nbytes)
      throw c.error(ErrorCode::kFormat, "tensor '" + t.name + "' byte size overflows", type_at);
    t.nbytes = *nbytes;
    pt.info_at = c.pos();
    pt.rel_offset = c.read<uint64_t>("tensor offset");
    if (pt.rel_offset % alignment != 0)
      throw c.error(ErrorCode::kFormat,
                    "tensor '" + t.name + "' offset " + std::to_string(pt.rel_offset) +
                        " is not a multiple of the alignment " + std::to_string(alignment),
                    pt.info_at);
    t.file = path;
    pending.push_back(std::move(pt));
  }

  // The data section starts at the next multiple of the alignment (pos <= size < 2^63).
  uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  if (n_tensors > 0 && data_start > file->size())
    throw c.error(ErrorCode::kFormat,
                  "truncated file: the data section would start at " + std::to_string(data_start) +
                      " but the file has " + std::to_string(file->size()) + " bytes",
                  c.pos());

  for (PendingTensor& pt : pending) {
    TensorInfo& t = pt.info;
    uint64_t begin, end;
    if (__builtin_add_overflow(data_start, pt.rel_offset, &begin) ||
        __builtin_add_overflow(begin, t.nbytes, &end) || end > file->size())
      throw c.error(ErrorCode::kFormat,
                    "tensor '" + t.name + "' data (offset " + std::to_string(pt.rel_offset) +
                        ", " + std::to_string(t.nbytes) + " bytes) lies beyond the end of the file (" +
                        std::to_string(file->size()) + " bytes)",
                    pt.info_at);
    t.file_offset = begin;
    t.data = file->data() + begin;
  }

  // Overlapping tensors would alias weights; cheap to rule out once sorted.
  std::vector<size_t> order(pending.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return pending[a].info.file_offset < pending[b].info.file_offset;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = pending[order[k - 1]].info;
    const TensorInfo& cur = pending[order[k]].info;
    if (prev.file_offset + prev.nbytes > cur.file_offset)
      throw c.error(ErrorCode::kFormat,
                    "tensors '" + prev.name + "' and '" + cur.name + "' overlap in the data section",
                    pending[order[k]].info_at);
  }

  out.tensors.reserve(out.tensors.size() + pending.size());
  for (PendingTensor& pt : pending) out.tensors.push_back(std::move(pt.info));
  out.files.push_back(file);
}

std::unique_ptr<CheckpointIndex> open_gguf(const std::string& path) {
  auto index = std::make_unique<CheckpointIndex>();
  index->format = "gguf";
  index->path = path;
  read_gguf(std::make_shared<MappedFile>(path), *index);
  index->reindex();
  return index;
}

}  // namespace brisk::gguf
