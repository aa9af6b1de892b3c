// GgufWriter: builds a GGUF v3 file (alignment 32, recorded as general.alignment) from typed
// metadata and tensors. Used by `brisk gen-model` to make synthetic checkpoints and by tests to
// make inputs for the reader; it checks what it is given so it never writes a file we reject.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "format/checkpoint.hpp"

namespace brisk {

class GgufWriter {
 public:
  GgufWriter() = default;

  // Metadata, written in the order added. A repeated key throws Error(kInvalidArgument);
  // general.alignment is written by the writer itself and may not be set.
  void add(const std::string& key, MetaValue value);
  void set_u8(const std::string& key, uint8_t v);
  void set_i8(const std::string& key, int8_t v);
  void set_u16(const std::string& key, uint16_t v);
  void set_i16(const std::string& key, int16_t v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_i64(const std::string& key, int64_t v);
  void set_f32(const std::string& key, float v);
  void set_f64(const std::string& key, double v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, std::string v);
  void set_array_strings(const std::string& key, std::vector<std::string> v);
  void set_array_f32(const std::string& key, const std::vector<float>& v);
  void set_array_i32(const std::string& key, const std::vector<int32_t>& v);
  void set_array_u32(const std::string& key, const std::vector<uint32_t>& v);
  // Any numeric element type (nums are converted to elem_type when written).
  void set_array_numbers(const std::string& key, MetaType elem_type, std::vector<double> v);

  // shape is outermost-first; bytes must be exactly dtype_bytes(dtype, numel) and the innermost
  // dim a whole number of blocks. Throws Error(kInvalidArgument) otherwise or on a repeated name.
  void add_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                  std::vector<uint8_t> bytes);
  // Bytes the writer does not copy: they must stay valid until write() or serialize().
  void add_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                  std::span<const uint8_t> bytes);
  // Bytes made only when the file is written, one tensor at a time, so a checkpoint larger
  // than memory can be written; produce must return exactly dtype_bytes(dtype, numel) bytes.
  using Producer = std::function<std::vector<uint8_t>()>;
  void add_tensor_lazy(const std::string& name, DType dtype, std::vector<int64_t> shape, Producer produce);

  // Writes the file (via a temporary beside it, renamed into place), streaming the tensors.
  // Throws Error(kIo).
  void write(const std::string& path) const;

  // The bytes write() would put in the file.
  std::vector<uint8_t> serialize() const;

  static constexpr uint32_t kAlignment = 32;

 private:
  struct Tensor {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t nbytes = 0;
    std::vector<uint8_t> owned;
    std::span<const uint8_t> view;  // owned's bytes, or the caller's
    Producer produce;               // or made at write time
  };
  static Tensor make(const std::string& name, DType dtype, std::vector<int64_t> shape, uint64_t nbytes);
  uint64_t check_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape) const;
  std::vector<uint8_t> header() const;
  // Calls sink(bytes) for the header, then each tensor's bytes and padding, in file order.
  void stream(const std::function<void(std::span<const uint8_t>)>& sink) const;
  std::vector<std::pair<std::string, MetaValue>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace brisk
