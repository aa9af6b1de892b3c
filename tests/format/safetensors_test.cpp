// safetensors reader and writer tests: round trips (also against the Python package when it
// is installed) and the inputs the Rust validator rejects: a lying header length, bad JSON,
// gaps, overlaps, size mismatches and unsupported dtypes.
#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include "base/half.hpp"
#include "format/checkpoint.hpp"
#include "format/safetensors_reader.hpp"
#include "format/safetensors_writer.hpp"
#include "format_test_util.hpp"
#include "../test_paths.hpp"

using namespace brisk;
using namespace brisk::test;

namespace {

std::vector<uint8_t> f32_bytes(std::vector<float> v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> u16_bytes(std::vector<uint16_t> v) {
  std::vector<uint8_t> b(v.size() * 2);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<SafetensorsTensor> sample_tensors() {
  return {
      {"model.embed.weight", DType::F32, {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6})},
      {"h.f16", DType::F16, {3}, u16_bytes({f32_to_f16(0.5f), f32_to_f16(-1.f), f32_to_f16(2.f)})},
      {"b.bf16", DType::BF16, {1, 2}, u16_bytes({f32_to_bf16(3.f), f32_to_bf16(-0.25f)})},
      {"scalar", DType::F32, {}, f32_bytes({7})},
      {"empty", DType::F32, {0, 4}, {}},
  };
}

// A file from a literal header and `data_len` zero bytes of data.
std::vector<uint8_t> craft(const std::string& header, uint64_t data_len, std::optional<uint64_t> n = {}) {
  std::vector<uint8_t> b(8 + header.size() + data_len, 0);
  uint64_t len = n.value_or(header.size());
  std::memcpy(b.data(), &len, 8);
  std::memcpy(b.data() + 8, header.data(), header.size());
  return b;
}

struct StHostile : ::testing::Test {
  std::string dir = scratch_dir();
  int n = 0;
  void expect(const std::vector<uint8_t>& b, const std::string& needle,
              std::optional<ErrorCode> code = std::nullopt) {
    std::string path = dir + "/h" + std::to_string(n++) + ".safetensors";
    write_file(path, b);
    expect_open_error(path, needle, code);
  }
  void expect_ok(const std::vector<uint8_t>& b) {
    std::string path = dir + "/ok" + std::to_string(n++) + ".safetensors";
    write_file(path, b);
    EXPECT_NO_THROW(open_checkpoint(path));
  }
};

}  // namespace

TEST(SafetensorsRoundTrip, DtypesShapesMetadata) {
  std::string path = scratch_dir() + "/m.safetensors";
  auto in = sample_tensors();
  write_safetensors(path, in, {{"format", "pt"}, {"note", "brisk"}});
  auto ck = open_checkpoint(path);
  EXPECT_EQ(ck->format, "safetensors");
  EXPECT_TRUE(ck->hf_config.is_null());
  ASSERT_EQ(ck->tensors.size(), in.size());
  for (const auto& t : in) {
    const TensorInfo* got = ck->find(t.name);
    ASSERT_NE(got, nullptr) << t.name;
    EXPECT_EQ(got->dtype, t.dtype) << t.name;
    EXPECT_EQ(got->shape, t.shape) << t.name;
    ASSERT_EQ(got->nbytes, t.bytes.size()) << t.name;
    if (!t.bytes.empty()) {
      EXPECT_EQ(std::memcmp(got->data, t.bytes.data(), t.bytes.size()), 0) << t.name;
    }
    EXPECT_EQ(got->data, ck->files[0]->data() + got->file_offset);
  }
  EXPECT_EQ(ck->find("scalar")->numel(), 1);
  EXPECT_EQ(ck->find("empty")->numel(), 0);
  // The writer pads the header so the data section starts 8-byte aligned.
  EXPECT_EQ(ck->find("model.embed.weight")->file_offset % 8, 0u);
  ASSERT_NE(ck->meta("safetensors.format"), nullptr);
  EXPECT_EQ(ck->meta("safetensors.format")->as_string(), "pt");
  EXPECT_EQ(ck->meta("safetensors.note")->as_string(), "brisk");
}

TEST(SafetensorsRoundTrip, PythonPackageAgrees) {
  if (std::system("python3 -c 'import safetensors.numpy' >/dev/null 2>&1") != 0)
    FAIL() << "python safetensors not installed: run scripts/setup";
  std::string dir = scratch_dir();
  write_safetensors(dir + "/ours.safetensors", sample_tensors(), {{"format", "pt"}});
  write_file(dir + "/check.py", std::string(R"PY(
import sys, struct, numpy as np, safetensors, safetensors.numpy
d = dict(safetensors.deserialize(open(sys.argv[1] + "/ours.safetensors", "rb").read()))
assert d["model.embed.weight"]["dtype"] == "F32", d["model.embed.weight"]
assert list(d["model.embed.weight"]["shape"]) == [2, 3]
assert bytes(d["model.embed.weight"]["data"]) == struct.pack("<6f", 1, 2, 3, 4, 5, 6)
assert d["b.bf16"]["dtype"] == "BF16" and list(d["b.bf16"]["shape"]) == [1, 2]
assert list(d["empty"]["shape"]) == [0, 4] and list(d["scalar"]["shape"]) == []
theirs = safetensors.numpy.save(
    {"w": np.array([[1, 2], [3, 4]], dtype=np.float16), "a": np.array([9], dtype=np.float32)},
    metadata={"format": "np"})
open(sys.argv[1] + "/theirs.safetensors", "wb").write(theirs)
)PY"));
  ASSERT_EQ(std::system(("python3 " + dir + "/check.py " + dir).c_str()), 0);
  auto ck = open_checkpoint(dir + "/theirs.safetensors");
  ASSERT_NE(ck->find("w"), nullptr);
  EXPECT_EQ(ck->find("w")->dtype, DType::F16);
  EXPECT_EQ(ck->find("w")->shape, (std::vector<int64_t>{2, 2}));
  const uint16_t* w = reinterpret_cast<const uint16_t*>(ck->find("w")->data);
  EXPECT_EQ(f16_to_f32(w[3]), 4.f);
  float a;
  std::memcpy(&a, ck->find("a")->data, 4);
  EXPECT_EQ(a, 9.f);
  EXPECT_EQ(ck->meta("safetensors.format")->as_string(), "np");
}

TEST(SafetensorsWriter, RejectsBadInput) {
  std::string p = scratch_dir() + "/bad.safetensors";
  EXPECT_THROW(write_safetensors(p, {{"a", DType::F32, {2}, std::vector<uint8_t>(7)}}), Error);
  EXPECT_THROW(write_safetensors(p, {{"a", DType::Q4_K, {256}, std::vector<uint8_t>(144)}}), Error);
  EXPECT_THROW(write_safetensors(p, {{"a", DType::F32, {-1}, {}}}), Error);
  EXPECT_THROW(write_safetensors(p, {{"a", DType::F32, {1}, std::vector<uint8_t>(4)},
                                     {"a", DType::F32, {1}, std::vector<uint8_t>(4)}}),
               Error);
  EXPECT_THROW(write_safetensors(p, {{"__metadata__", DType::F32, {1}, std::vector<uint8_t>(4)}}), Error);
}

TEST_F(StHostile, TruncatedAtEveryByte) {
  std::string path = dir + "/cut.safetensors";
  write_safetensors(path, sample_tensors(), {{"format", "pt"}});
  uint64_t size = read_all(path).size();
  for (uint64_t cut = size; cut-- > 0;) {
    ASSERT_EQ(::truncate(path.c_str(), off_t(cut)), 0);
    EXPECT_THROW(open_checkpoint(path), Error) << "cut at " << cut;
  }
}

TEST_F(StHostile, RandomByteFlipsNeverCrash) {
  // Flip bytes of a valid file (mostly in the JSON header): load or throw brisk::Error, only.
  std::string good_path = dir + "/good.safetensors";
  write_safetensors(good_path, sample_tensors(), {{"format", "pt"}});
  std::vector<uint8_t> good = read_all(good_path);
  std::string path = dir + "/flip.safetensors";
  uint32_t rng = 777;
  for (int k = 0; k < 500; ++k) {
    std::vector<uint8_t> b = good;
    for (int f = 0; f < 2; ++f) {
      rng = rng * 1664525u + 1013904223u;
      b[(rng >> 8) % b.size()] ^= uint8_t(1u << ((rng >> 4) & 7));
    }
    write_file(path, b);
    try {
      open_checkpoint(path);
    } catch (const Error&) {
    }
  }
}

TEST_F(StHostile, HeaderLength) {
  expect(std::vector<uint8_t>{1, 2, 3}, "too short", ErrorCode::kFormat);
  expect(craft("{}", 0, uint64_t(1) << 63), "exceeds the cap", ErrorCode::kLimit);
  expect(craft("{}", 0, (100u << 20) + 1), "exceeds the cap", ErrorCode::kLimit);
  expect(craft("{}", 0, 1000), "runs past the end of the file", ErrorCode::kFormat);
  expect_ok(craft("{}", 0));
  expect_ok(craft("{}      ", 0));  // space padding is allowed
}

TEST_F(StHostile, BadJson) {
  expect(craft("{\"a\": ", 0), "not valid JSON", ErrorCode::kFormat);
  expect(craft("not json", 0), "not valid JSON");
  expect(craft("[1, 2]", 0), "not a JSON object");
  expect(craft("{\"a\": 5}", 0), "'a' entry is not a JSON object");
  expect(craft(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", 4), "no string 'dtype'");
  expect(craft(R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", 4), "no array 'shape'");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1]}})", 4), "data_offsets");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4), "data_offsets");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4), "non-negative integers");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4), "non-negative integers");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, "4"]}})", 4), "non-negative integers");
  expect(craft(R"({"__metadata__": {"k": 1}})", 0), "__metadata__ value 'k' is not a string");
  expect(craft(R"({"__metadata__": [1]})", 0), "__metadata__ must be an object");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                   "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
         "duplicate tensor name 'a'");
  expect(craft(R"({"": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4), "empty tensor name");
}

TEST_F(StHostile, Dtypes) {
  expect(craft(R"({"pos_ids": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", 8),
         "'pos_ids' has dtype 'I64'", ErrorCode::kUnsupported);
  expect(craft(R"({"x": {"dtype": "Q4_K", "shape": [256], "data_offsets": [0, 144]}})", 144),
         "dtype 'Q4_K'", ErrorCode::kUnsupported);
  expect_ok(craft(R"({"x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}})", 4));
}

TEST_F(StHostile, SizesAndRanges) {
  expect(craft(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 4),
         "shape x dtype size (8 bytes) does not match its data_offsets range (4 bytes)");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4),
         "overflows");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8), "end 4 < begin 8");
  // Overlap: b starts inside a.
  expect(craft(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
         "overlapping 'a'");
  // Gap between tensors, and a gap at the start.
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})", 12),
         "leaving a gap after 'a'");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8), "gap after the start");
  // Beyond the file, and bytes no tensor claims.
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1024], "data_offsets": [0, 4096]}})", 16),
         "runs past the end of the file");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 12), "trailing or missing");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 18446744073709551615]}})", 4),
         "does not match");
  expect(craft(R"({"a": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 4]}})", 4),
         "rank 9", ErrorCode::kLimit);
}

TEST(OpenCheckpoint, SafetensorsNeedsItsSuffix) {
  std::string dir = scratch_dir();
  write_safetensors(dir + "/w.safetensors", sample_tensors());
  std::vector<uint8_t> b = read_all(dir + "/w.safetensors");
  write_file(dir + "/w.bin", b);
  expect_open_error(dir + "/w.bin", "unrecognised checkpoint");
}
