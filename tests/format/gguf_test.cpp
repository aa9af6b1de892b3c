// GGUF reader and writer tests: round trips through GgufWriter, the real Gemma 3 file, and
// hostile inputs (truncation at every header byte, lying counts, dims, offsets and types),
// each of which must raise brisk::Error naming the problem, never crash or over-allocate.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "format/checkpoint.hpp"
#include "format/gguf_reader.hpp"
#include "format/gguf_writer.hpp"
#include "format_test_util.hpp"
#include "../test_paths.hpp"

using namespace brisk;
using namespace brisk::test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t k = 0; k < n; ++k) b[k] = uint8_t(seed + k * 31);
  return b;
}

size_t bytes_of(DType t, uint64_t n) { return size_t(*dtype_bytes(t, n)); }

// A writer exercising every metadata type and several dtypes.
GgufWriter full_writer() {
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

std::string write_full(const std::string& dir) {
  std::string path = dir + "/full.gguf";
  full_writer().write(path);
  return path;
}

}  // namespace

TEST(GgufRoundTrip, EveryMetadataType) {
  auto ck = open_checkpoint(write_full(scratch_dir()));
  EXPECT_EQ(ck->format, "gguf");
  auto m = [&](const char* k) -> const MetaValue& {
    const MetaValue* v = ck->meta(k);
    if (!v) throw std::runtime_error(std::string("missing ") + k);
    return *v;
  };
  EXPECT_EQ(m("general.alignment").as_i64(), 32);
  EXPECT_EQ(m("general.architecture").as_string(), "testarch");
  EXPECT_EQ(m("t.u8").type, MetaType::U8);
  EXPECT_EQ(m("t.u8").as_i64(), 200);
  EXPECT_EQ(m("t.i8").as_i64(), -100);
  EXPECT_EQ(m("t.u16").as_i64(), 60000);
  EXPECT_EQ(m("t.i16").as_i64(), -30000);
  EXPECT_EQ(m("t.u32").as_i64(), 4000000000ll);
  EXPECT_EQ(m("t.i32").as_i64(), -2000000000);
  EXPECT_EQ(m("t.u64").u, 18000000000000000000ull);
  EXPECT_THROW(m("t.u64").as_i64(), Error);  // beyond int64
  EXPECT_EQ(m("t.i64").as_i64(), -9000000000000000000ll);
  EXPECT_EQ(m("t.f32").type, MetaType::F32);
  EXPECT_EQ(m("t.f32").as_f64(), 1.5);
  EXPECT_EQ(m("t.f64").as_f64(), 3.141592653589793);
  EXPECT_EQ(m("t.bool").type, MetaType::Bool);
  EXPECT_EQ(m("t.bool").as_i64(), 1);
  EXPECT_EQ(m("t.str").as_string(), std::string("h\xc3\xa9llo\0x", 8));
  EXPECT_EQ(m("t.empty").as_string(), "");
  EXPECT_EQ(m("t.arr_str").strs, (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(m("t.arr_str").array_size(), 3u);
  EXPECT_EQ(m("t.arr_f32").elem_type, MetaType::F32);
  EXPECT_EQ(m("t.arr_f32").nums, (std::vector<double>{0.5, -2.25}));
  EXPECT_EQ(m("t.arr_i32").nums, (std::vector<double>{-1, 0, 7}));
  EXPECT_EQ(m("t.arr_u32").nums, (std::vector<double>{1, 4000000000.0}));
  EXPECT_EQ(m("t.arr_u8").nums, (std::vector<double>{0, 255}));
  EXPECT_EQ(m("t.arr_i8").nums, (std::vector<double>{-128, 127}));
  EXPECT_EQ(m("t.arr_u16").nums, (std::vector<double>{65535}));
  EXPECT_EQ(m("t.arr_i16").nums, (std::vector<double>{-32768}));
  EXPECT_EQ(m("t.arr_u64").nums, (std::vector<double>{1e15}));
  EXPECT_EQ(m("t.arr_i64").nums, (std::vector<double>{-1e15}));
  EXPECT_EQ(m("t.arr_f64").nums, (std::vector<double>{0.1}));
  EXPECT_EQ(m("t.arr_bool").elem_type, MetaType::Bool);
  EXPECT_EQ(m("t.arr_bool").nums, (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(m("t.arr_empty").array_size(), 0u);
  const MetaValue& n = m("t.nested");
  ASSERT_EQ(n.elem_type, MetaType::Array);
  ASSERT_EQ(n.array_size(), 2u);
  EXPECT_EQ(n.items[0].elem_type, MetaType::I32);
  EXPECT_EQ(n.items[0].nums, (std::vector<double>{1, 2}));
  EXPECT_EQ(n.items[1].strs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(ck->metadata.size(), 29u);  // 28 written + general.alignment
  EXPECT_EQ(ck->meta("absent"), nullptr);
}

TEST(GgufRoundTrip, TensorsKeepShapeDtypeBytesAndAlignment) {
  auto ck = open_checkpoint(write_full(scratch_dir()));
  GgufWriter ref = full_writer();
  ASSERT_EQ(ck->tensors.size(), 9u);
  struct Want { const char* name; DType dtype; std::vector<int64_t> shape; uint8_t seed; };
  const Want want[] = {
      {"f32", DType::F32, {2, 3}, 1},       {"f16", DType::F16, {5}, 2},
      {"bf16", DType::BF16, {1, 1, 2, 3}, 3}, {"q8_0", DType::Q8_0, {3, 64}, 4},
      {"q4_0", DType::Q4_0, {1, 32}, 5},    {"q5_0", DType::Q5_0, {2, 32}, 6},
      {"q4_k", DType::Q4_K, {2, 256}, 7},   {"q5_k", DType::Q5_K, {1, 512}, 8},
      {"q6_k", DType::Q6_K, {256}, 9},
  };
  for (const Want& w : want) {
    const TensorInfo* t = ck->find(w.name);
    ASSERT_NE(t, nullptr) << w.name;
    EXPECT_EQ(t->dtype, w.dtype) << w.name;
    EXPECT_EQ(t->shape, w.shape) << w.name;
    int64_t numel = t->numel();
    std::vector<uint8_t> expect = pattern(bytes_of(w.dtype, uint64_t(numel)), w.seed);
    ASSERT_EQ(t->nbytes, expect.size()) << w.name;
    EXPECT_EQ(std::memcmp(t->data, expect.data(), expect.size()), 0) << w.name;
    EXPECT_EQ(t->file_offset % 32, 0u) << w.name;
    EXPECT_EQ(t->data, ck->files[0]->data() + t->file_offset);
    EXPECT_EQ(t->file, ck->path);
  }
  EXPECT_EQ(ck->find("nope"), nullptr);
  EXPECT_EQ(ref.serialize(), read_all(ck->path));  // write() writes what serialize() returns
}

TEST(GgufRoundTrip, EmptyFileWithNoTensors) {
  std::string path = scratch_dir() + "/empty.gguf";
  GgufWriter().write(path);
  auto ck = open_checkpoint(path);
  EXPECT_TRUE(ck->tensors.empty());
  EXPECT_EQ(ck->metadata.size(), 1u);
}

TEST(GgufRoundTrip, PythonGgufPackageReadsOurFile) {
  if (std::system("python3 -c 'import gguf' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python gguf not installed";
  std::string dir = scratch_dir();
  std::string path = write_full(dir);
  std::string script = dir + "/check.py";
  write_file(script, std::string(R"PY(
import sys, gguf
r = gguf.GGUFReader(sys.argv[1])
t = {x.name: x for x in r.tensors}
assert len(t) == 9, len(t)
assert [int(v) for v in t["f32"].shape] == [3, 2], t["f32"].shape
assert t["q4_k"].tensor_type == gguf.GGMLQuantizationType.Q4_K
assert bytes(t["f16"].data.tobytes()) == bytes((2 + k * 31) % 256 for k in range(10))
f = r.fields
assert bytes(f["general.architecture"].parts[-1]).decode() == "testarch"
assert int(f["t.u32"].parts[-1][0]) == 4000000000
assert [bytes(f["t.arr_str"].parts[i]).decode() for i in f["t.arr_str"].data] == ["a", "", "ccc"]
assert int(f["general.alignment"].parts[-1][0]) == 32
)PY"));
  EXPECT_EQ(std::system(("python3 " + script + " " + path).c_str()), 0);
}

TEST(GgufWriter, RejectsBadInput) {
  GgufWriter w;
  w.set_u32("a", 1);
  EXPECT_THROW(w.set_u32("a", 2), Error);
  EXPECT_THROW(w.set_u32("general.alignment", 64), Error);
  EXPECT_THROW(w.set_u32("", 1), Error);
  EXPECT_THROW(w.add_tensor("t", DType::F32, {2}, std::vector<uint8_t>(7)), Error);
  EXPECT_THROW(w.add_tensor("t", DType::Q4_K, {1, 100}, std::vector<uint8_t>(144)), Error);
  EXPECT_THROW(w.add_tensor("t", DType::F32, {0}, std::vector<uint8_t>()), Error);
  EXPECT_THROW(w.add_tensor("t", DType::F32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)), Error);
  w.add_tensor("t", DType::F32, {1}, std::vector<uint8_t>(4));
  EXPECT_THROW(w.add_tensor("t", DType::F32, {1}, std::vector<uint8_t>(4)), Error);
}

// ---- the real model ----

TEST(GgufRealModel, Gemma3Q4KM) {
  auto ck = open_checkpoint(default_model_path());
  EXPECT_EQ(ck->format, "gguf");
  EXPECT_EQ(ck->tensors.size(), 236u);
  ASSERT_NE(ck->meta("general.architecture"), nullptr);
  EXPECT_EQ(ck->meta("general.architecture")->as_string(), "gemma3");
  const MetaValue* tokens = ck->meta("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->elem_type, MetaType::String);
  EXPECT_EQ(tokens->array_size(), 262144u);
  const MetaValue* scores = ck->meta("tokenizer.ggml.scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->array_size(), 262144u);
  ASSERT_NE(ck->meta("gemma3.block_count"), nullptr);
  EXPECT_EQ(ck->meta("gemma3.block_count")->as_i64(), 18);
  EXPECT_EQ(ck->meta("gemma3.embedding_length")->as_i64(), 640);

  std::set<std::string> types;
  for (const auto& t : ck->tensors) {
    types.insert(dtype_name(t.dtype));
    EXPECT_EQ(t.file_offset % 32, 0u) << t.name;
    EXPECT_LE(t.file_offset + t.nbytes, ck->files[0]->size()) << t.name;
  }
  EXPECT_EQ(types, (std::set<std::string>{"F32", "Q5_0", "Q4_K", "Q8_0", "Q6_K"}));
  const TensorInfo* emb = ck->find("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{262144, 640}));
  EXPECT_EQ(emb->numel(), int64_t(262144) * 640);
  EXPECT_EQ(emb->nbytes, *dtype_bytes(emb->dtype, uint64_t(emb->numel())));
  const TensorInfo* norm = ck->find("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->dtype, DType::F32);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{640}));
  const float* w = reinterpret_cast<const float*>(norm->data);
  for (int k = 0; k < 640; ++k) ASSERT_TRUE(std::isfinite(w[k])) << k;
}

// ---- hostile inputs ----

TEST(GgufHostile, TruncatedSyntheticFileAtEveryByte) {
  std::string dir = scratch_dir();
  std::vector<uint8_t> full = full_writer().serialize();
  auto ck = open_checkpoint(write_full(dir));
  uint64_t data_end = 0;
  for (const auto& t : ck->tensors) data_end = std::max(data_end, t.file_offset + t.nbytes);
  std::string path = dir + "/cut.gguf";
  write_file(path, full);
  for (size_t cut = full.size(); cut-- > 0;) {  // shrink one file in place
    ASSERT_EQ(::truncate(path.c_str(), off_t(cut)), 0);
    if (cut < data_end) {
      EXPECT_THROW(open_checkpoint(path), Error) << "cut at " << cut;
    } else {
      EXPECT_NO_THROW(open_checkpoint(path)) << "cut in the trailing padding at " << cut;
    }
  }
}

TEST(GgufHostile, TruncatedRealModelHeader) {
  std::string src = default_model_path();
  uint64_t data_start = UINT64_MAX;
  {
    auto ck = open_checkpoint(src);
    for (const auto& t : ck->tensors) data_start = std::min(data_start, t.file_offset);
  }
  std::vector<uint8_t> head;
  {
    std::ifstream in(src, std::ios::binary);
    head.resize(data_start + 4096);
    in.read(reinterpret_cast<char*>(head.data()), std::streamsize(head.size()));
  }
  std::string path = scratch_dir() + "/cut.gguf";
  write_file(path, head);
  // Shrink one file in place, largest cut first: every byte of the first 4 KiB, then a spread
  // through the tokenizer arrays and tensor table, then just past the data start.
  std::set<uint64_t, std::greater<>> cuts;
  for (uint64_t c = 0; c < 4096; ++c) cuts.insert(c);
  for (uint64_t c = 4096; c < data_start; c += data_start / 97) cuts.insert(c);
  for (uint64_t c = data_start - 600; c < data_start + 4096; c += 37) cuts.insert(c);
  for (uint64_t cut : cuts) {
    ASSERT_EQ(::truncate(path.c_str(), off_t(cut)), 0);
    EXPECT_THROW(open_checkpoint(path), Error) << "cut at " << cut;
  }
}

namespace {

struct Hostile : ::testing::Test {
  std::string dir = scratch_dir();
  int n = 0;
  void expect(const RawGguf& g, const std::string& needle, std::optional<ErrorCode> code = std::nullopt) {
    std::string path = dir + "/h" + std::to_string(n++) + ".gguf";
    write_file(path, g.build());
    expect_open_error(path, needle, code);
  }
  void expect_ok(const RawGguf& g) {
    std::string path = dir + "/ok" + std::to_string(n++) + ".gguf";
    write_file(path, g.build());
    EXPECT_NO_THROW(open_checkpoint(path));
  }
};

}  // namespace

TEST_F(Hostile, BaselineCraftedFileIsValid) {
  RawGguf g;
  g.kv_string("general.architecture", "x");
  g.tensor("a", {8}, 0, 0);
  g.tensor("b", {32, 2}, 8, 32);
  g.data_bytes = 32 + 68;
  expect_ok(g);
}

TEST_F(Hostile, WrongMagicAndVersions) {
  RawGguf g;
  g.magic = 0x46554746;  // "FGUF"
  expect(g, "bad magic", ErrorCode::kFormat);
  g = RawGguf();
  g.version = 1;
  expect(g, "version 1", ErrorCode::kUnsupported);
  g.version = 99;
  expect(g, "version 99", ErrorCode::kUnsupported);
  g.version = 0x03000000;
  expect(g, "big-endian", ErrorCode::kUnsupported);
  g.version = 2;
  expect_ok(g);
}

TEST_F(Hostile, ErrorsNameTheFileAndOffset) {
  RawGguf g;
  g.version = 99;
  std::string path = dir + "/v99.gguf";
  write_file(path, g.build());
  try {
    open_checkpoint(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where(), at_offset(path, 4));
  }
}

TEST_F(Hostile, AbsurdCounts) {
  RawGguf g;
  g.n_tensors = uint64_t(1) << 63;
  expect(g, "tensor count", ErrorCode::kLimit);
  g = RawGguf();
  g.n_kv = uint64_t(1) << 63;
  expect(g, "metadata count", ErrorCode::kLimit);
  g = RawGguf();
  g.alignment = 1;  // no padding: the file ends right after the counts
  g.n_kv = 1000;    // under the cap but the file has none
  expect(g, "truncated", ErrorCode::kFormat);
  g.n_kv = 0;
  g.n_tensors = 1000;
  expect(g, "truncated", ErrorCode::kFormat);
}

TEST_F(Hostile, AbsurdStringLengths) {
  RawGguf g;
  g.kv("k", MetaType::String).put<uint64_t>(uint64_t(1) << 63);
  expect(g, "string value length", ErrorCode::kLimit);
  g = RawGguf();
  g.kv("k", MetaType::String).put<uint64_t>(1000);  // under the cap, beyond the file
  expect(g, "truncated", ErrorCode::kFormat);
  g = RawGguf();
  RawGguf::Bytes key;
  g.n_kv = 1;
  g.kv_string("", "");  // an empty key
  expect(g, "empty metadata key");
  // A key whose length prefix is absurd: build by hand.
  RawGguf h;
  h.n_kv = 1;
  std::vector<uint8_t> b = h.build();
  b.resize(24);
  uint64_t huge = ~uint64_t(0);
  b.insert(b.end(), reinterpret_cast<uint8_t*>(&huge), reinterpret_cast<uint8_t*>(&huge) + 8);
  std::string path = dir + "/key.gguf";
  write_file(path, b);
  expect_open_error(path, "metadata key length", ErrorCode::kLimit);
  g = RawGguf();
  g.tensor(std::string(70000, 'n'), {1}, 0, 0);
  expect(g, "tensor name length", ErrorCode::kLimit);
}

TEST_F(Hostile, AbsurdArrays) {
  RawGguf g;
  g.kv("a", MetaType::Array).put<uint32_t>(uint32_t(MetaType::U8)).put<uint64_t>(uint64_t(1) << 63);
  expect(g, "array length", ErrorCode::kLimit);
  g = RawGguf();
  g.kv("a", MetaType::Array).put<uint32_t>(uint32_t(MetaType::String)).put<uint64_t>(1u << 20);
  expect(g, "truncated", ErrorCode::kFormat);  // a million strings promised, none present
  g = RawGguf();
  g.kv("a", MetaType::Array).put<uint32_t>(uint32_t(MetaType::Array)).put<uint64_t>(1u << 24);
  expect(g, "array length", ErrorCode::kLimit);
  g = RawGguf();
  auto& b = g.kv("a", MetaType::Array);
  for (int d = 0; d < 6; ++d) b.put<uint32_t>(uint32_t(MetaType::Array)).put<uint64_t>(1);
  b.put<uint32_t>(uint32_t(MetaType::U8)).put<uint64_t>(0);
  expect(g, "nests arrays", ErrorCode::kLimit);
  g = RawGguf();
  g.kv("a", MetaType::Array).put<uint32_t>(77).put<uint64_t>(0);
  expect(g, "unknown value type 77");
  g = RawGguf();
  g.kv("a", MetaType(13)).put<uint32_t>(0);
  expect(g, "unknown value type 13");
  g = RawGguf();
  g.kv("a", MetaType::Array).put<uint32_t>(uint32_t(MetaType::I32)).put<uint64_t>(2).put<int32_t>(5).put<int32_t>(6);
  expect_ok(g);
}

TEST_F(Hostile, DuplicateKeysAndTensorNames) {
  RawGguf g;
  g.kv_u32("k", 1);
  g.kv_u32("k", 2);
  expect(g, "duplicate metadata key 'k'");
  g = RawGguf();
  g.tensor("w", {8}, 0, 0);
  g.tensor("w", {8}, 0, 32);
  g.data_bytes = 64;
  expect(g, "duplicate tensor name 'w'");
}

TEST_F(Hostile, BadDims) {
  for (uint32_t nd : {0u, 5u, 0xffffffffu}) {
    RawGguf g;
    g.tensor("w", {}, 0, 0, nd);
    expect(g, "n_dims " + std::to_string(nd));
  }
  RawGguf g;
  g.tensor("w", {4, 0}, 0, 0);
  expect(g, "dim 1 is 0");
  g = RawGguf();
  g.tensor("w", {uint64_t(1) << 32, uint64_t(1) << 32}, 0, 0);
  expect(g, "overflows");
  g = RawGguf();
  g.tensor("w", {~uint64_t(0)}, 0, 0);  // -1 as int64
  expect(g, "must be positive");
  g = RawGguf();
  g.tensor("w", {uint64_t(1) << 62}, 0, 0);  // F32 byte count overflows u64
  expect(g, "byte size overflows");
  g = RawGguf();
  g.tensor("w", {100, 2}, 12, 0);  // Q4_K rows of 100
  g.data_bytes = 4096;
  expect(g, "not a whole number of Q4_K blocks");
}

TEST_F(Hostile, BadTypes) {
  RawGguf g;
  g.tensor("blk.0.w", {256}, 10, 0);  // Q2_K: real ggml, not brisk
  g.data_bytes = 4096;
  expect(g, "'blk.0.w' has ggml type Q2_K (id 10)", ErrorCode::kUnsupported);
  g = RawGguf();
  g.tensor("w", {256}, 9999, 0);
  expect(g, "type 9999", ErrorCode::kUnsupported);
}

TEST_F(Hostile, BadOffsets) {
  RawGguf g;
  g.tensor("w", {8}, 0, 1u << 20);
  g.data_bytes = 32;
  expect(g, "beyond the end of the file");
  g = RawGguf();
  g.tensor("w", {8}, 0, ~uint64_t(0) - 31);  // aligned, and data_start + offset overflows
  expect(g, "beyond the end of the file");
  g = RawGguf();
  g.tensor("w", {8}, 0, 0);
  g.data_bytes = 31;  // one byte short
  expect(g, "beyond the end of the file");
  g = RawGguf();
  g.tensor("w", {8}, 0, 4);
  g.data_bytes = 64;
  expect(g, "not a multiple of the alignment 32");
  g = RawGguf();
  g.tensor("a", {16}, 0, 0);
  g.tensor("b", {8}, 0, 32);  // a spans [0, 64)
  g.data_bytes = 96;
  expect(g, "overlap");
}

TEST_F(Hostile, Alignment) {
  for (uint32_t a : {0u, 48u, 1u << 21}) {
    RawGguf g;
    g.kv_u32("general.alignment", a);
    expect(g, "general.alignment " + std::to_string(a));
    expect(g, "at offset 24");  // the key's position, right after the header
  }
  RawGguf g;
  g.kv_string("general.alignment", "32");
  expect(g, "general.alignment must be an integer");
  // A valid non-default alignment moves the data section and the offset rule.
  g = RawGguf();
  g.kv_u32("general.alignment", 64);
  g.alignment = 64;
  g.tensor("w", {8}, 0, 64);
  g.data_bytes = 96;
  std::string path = dir + "/a64.gguf";
  write_file(path, g.build());
  auto ck = open_checkpoint(path);
  EXPECT_EQ(ck->tensors[0].file_offset % 64, 0u);
  EXPECT_EQ(ck->tensors[0].file_offset, ck->files[0]->size() - 96 + 64);
  g = RawGguf();
  g.kv_u32("general.alignment", 64);
  g.alignment = 64;
  g.tensor("w", {8}, 0, 32);
  g.data_bytes = 96;
  expect(g, "not a multiple of the alignment 64");
}

TEST_F(Hostile, RandomByteFlipsNeverCrash) {
  // Flip bytes of a valid header; each result must either load or throw brisk::Error.
  std::vector<uint8_t> good = full_writer().serialize();
  size_t header = good.size();
  {
    auto ck = open_checkpoint(write_full(dir));
    for (const auto& t : ck->tensors) header = std::min<size_t>(header, t.file_offset);
  }
  std::string path = dir + "/flip.gguf";
  uint32_t rng = 12345;
  for (int k = 0; k < 1000; ++k) {
    std::vector<uint8_t> b = good;
    for (int f = 0; f < 3; ++f) {
      rng = rng * 1664525u + 1013904223u;
      b[(rng >> 8) % header] ^= uint8_t(1u << ((rng >> 4) & 7));
    }
    write_file(path, b);
    try {
      open_checkpoint(path);
    } catch (const Error&) {
    }
  }
}

TEST(OpenCheckpoint, UnrecognisedFiles) {
  std::string dir = scratch_dir();
  write_file(dir + "/x.bin", std::string("PK\x03\x04 zip"));
  expect_open_error(dir + "/x.bin", "unrecognised checkpoint (bad magic 50 4b 03 04", ErrorCode::kFormat);
  write_file(dir + "/tiny.gguf", std::string("GG"));
  expect_open_error(dir + "/tiny.gguf", "unrecognised checkpoint", ErrorCode::kFormat);
  write_file(dir + "/empty", std::string());
  expect_open_error(dir + "/empty", "unrecognised checkpoint");
  write_file(dir + "/GGUF_only", std::string("GGUF"));
  expect_open_error(dir + "/GGUF_only", "truncated");
  expect_open_error(dir + "/does-not-exist.gguf", "not found", ErrorCode::kIo);
}

TEST(MetaValue, Accessors) {
  MetaValue s;
  s.type = MetaType::String;
  s.s = "x";
  EXPECT_FALSE(s.is_number());
  EXPECT_THROW(s.as_i64(), Error);
  EXPECT_THROW(s.as_f64(), Error);
  EXPECT_THROW(s.array_size(), Error);
  MetaValue f;
  f.type = MetaType::F32;
  f.f = 3.0;
  EXPECT_TRUE(f.is_number());
  EXPECT_EQ(f.as_i64(), 3);
  f.f = 3.5;
  EXPECT_THROW(f.as_i64(), Error);
  f.f = 1e300;
  EXPECT_THROW(f.as_i64(), Error);
  EXPECT_THROW(f.as_string(), Error);
  MetaValue i;
  i.type = MetaType::I16;
  i.i = -7;
  EXPECT_EQ(i.as_f64(), -7.0);
}

TEST(CheckpointIndex, FindOnHandBuiltIndexAndReindexDuplicates) {
  CheckpointIndex idx;
  idx.tensors.push_back(TensorInfo{.name = "a", .shape = {}, .file = {}});
  idx.tensors.push_back(TensorInfo{.name = "b", .shape = {}, .file = {}});
  ASSERT_NE(idx.find("b"), nullptr);
  EXPECT_EQ(idx.find("b")->name, "b");
  idx.tensors.push_back(TensorInfo{.name = "a", .shape = {}, .file = {}});
  EXPECT_THROW(idx.reindex(), Error);
}
