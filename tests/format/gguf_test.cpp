// GGUF reader and writer tests: round trips through GgufWriter (cross-checked with the Python
// gguf package when installed), the real Gemma 3 file, and the small accessors. Hostile inputs
// live in gguf_hostile_test.cpp.
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
#include "gguf_sample.hpp"
#include "../test_paths.hpp"

using namespace brisk;
using namespace brisk::test;

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
  if (std::system("python3 -c 'import gguf' >/dev/null 2>&1") != 0) FAIL() << "python gguf not installed: run scripts/setup";
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
