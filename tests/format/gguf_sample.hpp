// A GGUF file built by GgufWriter that uses every metadata type and several dtypes, shared by
// the round-trip tests and the hostile tests (which cut and corrupt it).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "format/gguf_writer.hpp"

namespace brisk::test {


inline std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t k = 0; k < n; ++k) b[k] = uint8_t(seed + k * 31);
  return b;
}

inline size_t bytes_of(DType t, uint64_t n) { return size_t(*dtype_bytes(t, n)); }

// A writer exercising every metadata type and several dtypes.
inline GgufWriter full_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "testarch");
  w.set_u8("t.u8", 200);
  w.set_i8("t.i8", -100);
  w.set_u16("t.u16", 60000);
  w.set_i16("t.i16", -30000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_u64("t.u64", 18000000000000000000ull);
  w.set_i64("t.i64", -9000000000000000000ll);
  w.set_f32("t.f32", 1.5f);
  w.set_f64("t.f64", 3.141592653589793);
  w.set_bool("t.bool", true);
  w.set_string("t.str", std::string("h\xc3\xa9llo\0x", 8));  // UTF-8 and an embedded NUL
  w.set_string("t.empty", "");
  w.set_array_strings("t.arr_str", {"a", "", "ccc"});
  w.set_array_f32("t.arr_f32", {0.5f, -2.25f});
  w.set_array_i32("t.arr_i32", {-1, 0, 7});
  w.set_array_u32("t.arr_u32", {1, 4000000000u});
  w.set_array_numbers("t.arr_u8", MetaType::U8, {0, 255});
  w.set_array_numbers("t.arr_i8", MetaType::I8, {-128, 127});
  w.set_array_numbers("t.arr_u16", MetaType::U16, {65535});
  w.set_array_numbers("t.arr_i16", MetaType::I16, {-32768});
  w.set_array_numbers("t.arr_u64", MetaType::U64, {1e15});
  w.set_array_numbers("t.arr_i64", MetaType::I64, {-1e15});
  w.set_array_numbers("t.arr_f64", MetaType::F64, {0.1});
  w.set_array_numbers("t.arr_bool", MetaType::Bool, {1, 0, 1});
  w.set_array_numbers("t.arr_empty", MetaType::F32, {});
  MetaValue nested;  // [[1, 2], ["x"]] : an array of arrays
  nested.type = MetaType::Array;
  nested.elem_type = MetaType::Array;
  MetaValue a1;
  a1.type = MetaType::Array;
  a1.elem_type = MetaType::I32;
  a1.nums = {1, 2};
  MetaValue a2;
  a2.type = MetaType::Array;
  a2.elem_type = MetaType::String;
  a2.strs = {"x"};
  nested.items = {a1, a2};
  w.add("t.nested", nested);

  w.add_tensor("f32", DType::F32, {2, 3}, pattern(bytes_of(DType::F32, 6), 1));
  w.add_tensor("f16", DType::F16, {5}, pattern(bytes_of(DType::F16, 5), 2));
  w.add_tensor("bf16", DType::BF16, {1, 1, 2, 3}, pattern(bytes_of(DType::BF16, 6), 3));
  w.add_tensor("q8_0", DType::Q8_0, {3, 64}, pattern(bytes_of(DType::Q8_0, 192), 4));
  w.add_tensor("q4_0", DType::Q4_0, {1, 32}, pattern(bytes_of(DType::Q4_0, 32), 5));
  w.add_tensor("q5_0", DType::Q5_0, {2, 32}, pattern(bytes_of(DType::Q5_0, 64), 6));
  w.add_tensor("q4_k", DType::Q4_K, {2, 256}, pattern(bytes_of(DType::Q4_K, 512), 7));
  w.add_tensor("q5_k", DType::Q5_K, {1, 512}, pattern(bytes_of(DType::Q5_K, 512), 8));
  w.add_tensor("q6_k", DType::Q6_K, {256}, pattern(bytes_of(DType::Q6_K, 256), 9));
  return w;
}

inline std::string write_full(const std::string& dir) {
  std::string path = dir + "/full.gguf";
  full_writer().write(path);
  return path;
}

}  // namespace brisk::test
