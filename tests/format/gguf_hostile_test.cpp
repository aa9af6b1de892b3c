// Hostile GGUF inputs: truncation at every header byte (synthetic and real file), lying
// counts, lengths, dims, offsets, types and alignments, and random byte flips. Each must raise
// brisk::Error naming the problem, never crash, over-read or over-allocate.
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
