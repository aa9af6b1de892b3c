// GGUF v3 serializer: header, key-values, tensor infos (dims innermost first, offsets relative
// to the data section), zero padding to the alignment, then each tensor padded to it.
#include "format/gguf_writer.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "format/gguf_reader.hpp"

namespace brisk {
namespace {

class Sink {
 public:
  std::vector<uint8_t> buf;
  template <typename T>
  void put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    buf.insert(buf.end(), b, b + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    buf.insert(buf.end(), s.begin(), s.end());
  }
  void pad(uint64_t alignment) {
    while (buf.size() % alignment) buf.push_back(0);
  }
};

void put_number(Sink& o, MetaType t, double v) {
  switch (t) {
    case MetaType::U8: o.put<uint8_t>(uint8_t(v)); return;
    case MetaType::I8: o.put<int8_t>(int8_t(v)); return;
    case MetaType::U16: o.put<uint16_t>(uint16_t(v)); return;
    case MetaType::I16: o.put<int16_t>(int16_t(v)); return;
    case MetaType::U32: o.put<uint32_t>(uint32_t(v)); return;
    case MetaType::I32: o.put<int32_t>(int32_t(v)); return;
    case MetaType::U64: o.put<uint64_t>(uint64_t(v)); return;
    case MetaType::I64: o.put<int64_t>(int64_t(v)); return;
    case MetaType::F32: o.put<float>(float(v)); return;
    case MetaType::F64: o.put<double>(v); return;
    case MetaType::Bool: o.put<uint8_t>(v != 0); return;
    default: break;
  }
  throw Error(ErrorCode::kInvalidArgument, "array of numbers with a non-numeric element type");
}

void put_value(Sink& o, const MetaValue& v) {
  switch (v.type) {
    case MetaType::U8: o.put<uint8_t>(uint8_t(v.u)); return;
    case MetaType::U16: o.put<uint16_t>(uint16_t(v.u)); return;
    case MetaType::U32: o.put<uint32_t>(uint32_t(v.u)); return;
    case MetaType::U64: o.put<uint64_t>(v.u); return;
    case MetaType::I8: o.put<int8_t>(int8_t(v.i)); return;
    case MetaType::I16: o.put<int16_t>(int16_t(v.i)); return;
    case MetaType::I32: o.put<int32_t>(int32_t(v.i)); return;
    case MetaType::I64: o.put<int64_t>(v.i); return;
    case MetaType::F32: o.put<float>(float(v.f)); return;
    case MetaType::F64: o.put<double>(v.f); return;
    case MetaType::Bool: o.put<uint8_t>(v.u != 0); return;
    case MetaType::String: o.str(v.s); return;
    case MetaType::Array:
      o.put<uint32_t>(uint32_t(v.elem_type));
      if (v.elem_type == MetaType::String) {
        o.put<uint64_t>(v.strs.size());
        for (const auto& s : v.strs) o.str(s);
      } else if (v.elem_type == MetaType::Array) {
        o.put<uint64_t>(v.items.size());
        for (const auto& item : v.items) {
          if (item.type != MetaType::Array)
            throw Error(ErrorCode::kInvalidArgument, "array of arrays holds a non-array item");
          put_value(o, item);
        }
      } else {
        o.put<uint64_t>(v.nums.size());
        for (double d : v.nums) put_number(o, v.elem_type, d);
      }
      return;
  }
  throw Error(ErrorCode::kInvalidArgument, "metadata value of unknown type");
}

MetaValue scalar(MetaType t) {
  MetaValue v;
  v.type = t;
  return v;
}

MetaValue array_of(MetaType elem) {
  MetaValue v;
  v.type = MetaType::Array;
  v.elem_type = elem;
  return v;
}

}  // namespace

void GgufWriter::add(const std::string& key, MetaValue value) {
  if (key.empty() || key.size() > gguf::kMaxKeyLen)
    throw Error(ErrorCode::kInvalidArgument, "GGUF key must have 1.." + std::to_string(gguf::kMaxKeyLen) + " bytes");
  if (key == "general.alignment")
    throw Error(ErrorCode::kInvalidArgument, "general.alignment is written by GgufWriter itself");
  for (const auto& [k, v] : kv_)
    if (k == key) throw Error(ErrorCode::kInvalidArgument, "duplicate GGUF key '" + key + "'");
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::set_u8(const std::string& k, uint8_t x) { auto v = scalar(MetaType::U8); v.u = x; add(k, std::move(v)); }
void GgufWriter::set_i8(const std::string& k, int8_t x) { auto v = scalar(MetaType::I8); v.i = x; add(k, std::move(v)); }
void GgufWriter::set_u16(const std::string& k, uint16_t x) { auto v = scalar(MetaType::U16); v.u = x; add(k, std::move(v)); }
void GgufWriter::set_i16(const std::string& k, int16_t x) { auto v = scalar(MetaType::I16); v.i = x; add(k, std::move(v)); }
void GgufWriter::set_u32(const std::string& k, uint32_t x) { auto v = scalar(MetaType::U32); v.u = x; add(k, std::move(v)); }
void GgufWriter::set_i32(const std::string& k, int32_t x) { auto v = scalar(MetaType::I32); v.i = x; add(k, std::move(v)); }
void GgufWriter::set_u64(const std::string& k, uint64_t x) { auto v = scalar(MetaType::U64); v.u = x; add(k, std::move(v)); }
void GgufWriter::set_i64(const std::string& k, int64_t x) { auto v = scalar(MetaType::I64); v.i = x; add(k, std::move(v)); }
void GgufWriter::set_f32(const std::string& k, float x) { auto v = scalar(MetaType::F32); v.f = x; add(k, std::move(v)); }
void GgufWriter::set_f64(const std::string& k, double x) { auto v = scalar(MetaType::F64); v.f = x; add(k, std::move(v)); }
void GgufWriter::set_bool(const std::string& k, bool x) { auto v = scalar(MetaType::Bool); v.u = x; add(k, std::move(v)); }
void GgufWriter::set_string(const std::string& k, std::string x) { auto v = scalar(MetaType::String); v.s = std::move(x); add(k, std::move(v)); }

void GgufWriter::set_array_strings(const std::string& k, std::vector<std::string> x) {
  auto v = array_of(MetaType::String);
  v.strs = std::move(x);
  add(k, std::move(v));
}
void GgufWriter::set_array_f32(const std::string& k, const std::vector<float>& x) {
  set_array_numbers(k, MetaType::F32, std::vector<double>(x.begin(), x.end()));
}
void GgufWriter::set_array_i32(const std::string& k, const std::vector<int32_t>& x) {
  set_array_numbers(k, MetaType::I32, std::vector<double>(x.begin(), x.end()));
}
void GgufWriter::set_array_u32(const std::string& k, const std::vector<uint32_t>& x) {
  set_array_numbers(k, MetaType::U32, std::vector<double>(x.begin(), x.end()));
}
void GgufWriter::set_array_numbers(const std::string& k, MetaType elem, std::vector<double> x) {
  if (elem == MetaType::String || elem == MetaType::Array || uint32_t(elem) > uint32_t(MetaType::F64))
    throw Error(ErrorCode::kInvalidArgument, "set_array_numbers needs a numeric element type");
  auto v = array_of(elem);
  v.nums = std::move(x);
  add(k, std::move(v));
}

GgufWriter::Tensor GgufWriter::make(const std::string& name, DType dtype, std::vector<int64_t> shape, uint64_t nbytes) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.nbytes = nbytes;
  return t;
}

uint64_t GgufWriter::check_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape) const {
  const std::string what = "GGUF tensor '" + name + "'";
  if (name.empty()) throw Error(ErrorCode::kInvalidArgument, "GGUF tensor with an empty name");
  for (const auto& t : tensors_)
    if (t.name == name) throw Error(ErrorCode::kInvalidArgument, "duplicate " + what);
  if (shape.empty() || shape.size() > gguf::kMaxDims)
    throw Error(ErrorCode::kInvalidArgument, what + " must have 1..4 dims");
  uint64_t numel = 1;
  for (int64_t d : shape)
    if (d <= 0 || __builtin_mul_overflow(numel, uint64_t(d), &numel))
      throw Error(ErrorCode::kInvalidArgument, what + " has a non-positive or overflowing dim");
  const DTypeTraits& tr = dtype_traits(dtype);
  if (shape.back() % tr.block_elems != 0)
    throw Error(ErrorCode::kInvalidArgument, what + " row is not a whole number of " + tr.name + " blocks");
  std::optional<uint64_t> nb = dtype_bytes(dtype, numel);
  if (!nb) throw Error(ErrorCode::kInvalidArgument, what + " is too large");
  return *nb;
}

namespace {
void check_size(const std::string& name, uint64_t got, uint64_t want) {
  if (got != want)
    throw Error(ErrorCode::kInvalidArgument, "GGUF tensor '" + name + "' has " + std::to_string(got) +
                                                 " bytes, expected " + std::to_string(want));
}
}  // namespace

void GgufWriter::add_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            std::span<const uint8_t> bytes) {
  const uint64_t nb = check_tensor(name, dtype, shape);
  check_size(name, bytes.size(), nb);
  Tensor t = make(name, dtype, std::move(shape), nb);
  t.view = bytes;
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            std::vector<uint8_t> bytes) {
  const uint64_t nb = check_tensor(name, dtype, shape);
  check_size(name, bytes.size(), nb);
  Tensor t = make(name, dtype, std::move(shape), nb);
  t.owned = std::move(bytes);
  t.view = t.owned;  // a vector's buffer does not move with the vector
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor_lazy(const std::string& name, DType dtype, std::vector<int64_t> shape, Producer produce) {
  const uint64_t nb = check_tensor(name, dtype, shape);
  Tensor t = make(name, dtype, std::move(shape), nb);
  t.produce = std::move(produce);
  tensors_.push_back(std::move(t));
}

std::vector<uint8_t> GgufWriter::header() const {
  Sink o;
  o.put<uint32_t>(gguf::kMagic);
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors_.size());
  o.put<uint64_t>(kv_.size() + 1);
  o.str("general.alignment");
  o.put<uint32_t>(uint32_t(MetaType::U32));
  o.put<uint32_t>(kAlignment);
  for (const auto& [k, v] : kv_) {
    o.str(k);
    o.put<uint32_t>(uint32_t(v.type));
    put_value(o, v);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    o.str(t.name);
    o.put<uint32_t>(uint32_t(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) o.put<uint64_t>(uint64_t(*it));
    o.put<uint32_t>(uint32_t(t.dtype));
    o.put<uint64_t>(offset);
    offset += (t.nbytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  o.pad(kAlignment);
  return o.buf;
}

void GgufWriter::stream(const std::function<void(std::span<const uint8_t>)>& sink) const {
  sink(header());
  static const uint8_t zeros[kAlignment] = {};
  for (const auto& t : tensors_) {
    if (t.produce) {
      const std::vector<uint8_t> bytes = t.produce();
      check_size(t.name, bytes.size(), t.nbytes);
      sink(bytes);
    } else {
      sink(t.view);
    }
    if (const uint64_t rem = t.nbytes % kAlignment) sink(std::span<const uint8_t>(zeros, kAlignment - rem));
  }
}

std::vector<uint8_t> GgufWriter::serialize() const {
  std::vector<uint8_t> out;
  stream([&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); });
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::string tmp = path + ".tmp";
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::kIo, "cannot create", tmp);
    stream([&](std::span<const uint8_t> b) {
      out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
      if (!out) throw Error(ErrorCode::kIo, "write failed (disk full?)", tmp);
    });
    if (!out.flush()) throw Error(ErrorCode::kIo, "write failed", tmp);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, "cannot rename into place", path);
  }
}

}  // namespace brisk
