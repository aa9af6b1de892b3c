// Hugging Face directory tests: single-file and sharded layouts, the optional config files,
// and the failures a user would hit (no config, no weights, an index naming a missing shard,
// a shard that does not hold what the index says, or a shard path escaping the directory).
#include <filesystem>

#include <gtest/gtest.h>

#include "format/checkpoint.hpp"
#include "format/hf_dir.hpp"
#include "format/safetensors_writer.hpp"
#include "format_test_util.hpp"
#include "../test_paths.hpp"

using namespace brisk;
using namespace brisk::test;

namespace {

SafetensorsTensor f32(const std::string& name, std::vector<int64_t> shape, float base) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = base + float(k);
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return {name, DType::F32, std::move(shape), std::move(b)};
}

const char* kConfig = R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8, "num_hidden_layers": 1})";

// config.json + two shards + an index, plus the optional files.
std::string make_sharded(const std::string& dir) {
  write_file(dir + "/config.json", std::string(kConfig));
  write_safetensors(dir + "/model-00001-of-00002.safetensors",
                    {f32("model.embed_tokens.weight", {4, 8}, 0), f32("model.norm.weight", {8}, 1)},
                    {{"format", "pt"}});
  write_safetensors(dir + "/model-00002-of-00002.safetensors", {f32("lm_head.weight", {4, 8}, 2)},
                    {{"format", "pt"}});
  write_file(dir + "/model.safetensors.index.json", std::string(R"({
    "metadata": {"total_size": 288},
    "weight_map": {
      "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
      "model.norm.weight": "model-00001-of-00002.safetensors",
      "lm_head.weight": "model-00002-of-00002.safetensors"}})"));
  return dir;
}

void write_index(const std::string& dir, const std::string& weight_map) {
  write_file(dir + "/model.safetensors.index.json", "{\"weight_map\": " + weight_map + "}");
}

}  // namespace

TEST(HfDir, SingleFileWithOptionalConfigs) {
  std::string dir = scratch_dir();
  write_file(dir + "/config.json", std::string(kConfig));
  write_safetensors(dir + "/model.safetensors", {f32("w", {2, 3}, 5)});
  write_file(dir + "/generation_config.json", std::string(R"({"eos_token_id": [1, 106]})"));
  write_file(dir + "/tokenizer_config.json", std::string(R"({"chat_template": "{{ x }}"})"));
  write_file(dir + "/tokenizer.json", std::string("{}"));
  auto ck = open_checkpoint(dir);
  EXPECT_EQ(ck->format, "hf");
  EXPECT_EQ(ck->path, dir);
  EXPECT_EQ(ck->hf_config["hidden_size"], 8);
  EXPECT_EQ(ck->hf_generation_config["eos_token_id"][1], 106);
  EXPECT_EQ(ck->hf_tokenizer_config["chat_template"], "{{ x }}");
  EXPECT_EQ(ck->hf_tokenizer_json_path, dir + "/tokenizer.json");
  const TensorInfo* w = ck->find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  float x;
  std::memcpy(&x, w->data + 4 * 5, 4);
  EXPECT_EQ(x, 10.f);
  EXPECT_EQ(w->file, dir + "/model.safetensors");
}

TEST(HfDir, OptionalFilesMayBeAbsent) {
  std::string dir = scratch_dir();
  write_file(dir + "/config.json", std::string(kConfig));
  write_safetensors(dir + "/model.safetensors", {f32("w", {2}, 0)});
  auto ck = open_checkpoint(dir);
  EXPECT_TRUE(ck->hf_generation_config.is_null());
  EXPECT_TRUE(ck->hf_tokenizer_config.is_null());
  EXPECT_TRUE(ck->hf_tokenizer_json_path.empty());
}

TEST(HfDir, ShardedIndexOpensEachShardOnce) {
  std::string dir = make_sharded(scratch_dir());
  auto ck = open_checkpoint(dir);
  EXPECT_EQ(ck->tensors.size(), 3u);
  EXPECT_EQ(ck->files.size(), 2u);
  ASSERT_NE(ck->find("lm_head.weight"), nullptr);
  EXPECT_EQ(ck->find("lm_head.weight")->file, dir + "/model-00002-of-00002.safetensors");
  float x;
  std::memcpy(&x, ck->find("lm_head.weight")->data, 4);
  EXPECT_EQ(x, 2.f);
  EXPECT_EQ(ck->find("model.norm.weight")->file, dir + "/model-00001-of-00002.safetensors");
}

TEST(HfDir, MissingConfigOrWeights) {
  std::string dir = scratch_dir();
  write_safetensors(dir + "/model.safetensors", {f32("w", {2}, 0)});
  expect_open_error(dir, "no config.json");
  std::string dir2 = scratch_dir();
  write_file(dir2 + "/config.json", std::string(kConfig));
  expect_open_error(dir2, "neither model.safetensors nor model.safetensors.index.json");
  write_file(dir2 + "/config.json", std::string("{bad"));
  expect_open_error(dir2, "invalid JSON", ErrorCode::kFormat);
  write_file(dir2 + "/config.json", std::string("[1]"));
  expect_open_error(dir2, "expected a JSON object");
}

TEST(HfDir, BadOptionalJsonIsAnError) {
  std::string dir = scratch_dir();
  write_file(dir + "/config.json", std::string(kConfig));
  write_safetensors(dir + "/model.safetensors", {f32("w", {2}, 0)});
  write_file(dir + "/generation_config.json", std::string("{oops"));
  expect_open_error(dir, "generation_config.json");
}

TEST(HfDir, IndexProblems) {
  std::string dir = make_sharded(scratch_dir());
  write_index(dir, R"({"lm_head.weight": "model-00003-of-00002.safetensors"})");
  expect_open_error(dir, "shard 'model-00003-of-00002.safetensors' named by the index is missing");
  write_index(dir, R"({"lm_head.weight": "../x.safetensors"})");
  expect_open_error(dir, "not a plain file name");
  write_index(dir, R"({"lm_head.weight": "/etc/passwd"})");
  expect_open_error(dir, "not a plain file name");
  write_index(dir, R"({"lm_head.weight": ".."})");
  expect_open_error(dir, "not a plain file name");
  write_index(dir, R"({"lm_head.weight": 3})");
  expect_open_error(dir, "is not a file name");
  write_index(dir, R"({})");
  expect_open_error(dir, "weight_map");
  write_file(dir + "/model.safetensors.index.json", std::string(R"({"metadata": {}})"));
  expect_open_error(dir, "weight_map");
  // The index puts a tensor in a shard that does not hold it.
  write_index(dir, R"({"lm_head.weight": "model-00001-of-00002.safetensors"})");
  expect_open_error(dir, "index lists tensor 'lm_head.weight' in shard 'model-00001-of-00002.safetensors'");
  write_index(dir, R"({"lm_head.weight": "model-00002-of-00002.safetensors",
                       "ghost.weight": "model-00002-of-00002.safetensors"})");
  expect_open_error(dir, "'ghost.weight'");
  // The same tensor in two shards.
  write_safetensors(dir + "/model-00002-of-00002.safetensors", {f32("model.norm.weight", {8}, 2)});
  write_index(dir, R"({"model.norm.weight": "model-00001-of-00002.safetensors",
                       "x": "model-00002-of-00002.safetensors"})");
  expect_open_error(dir, "appears in both");
}

TEST(HfDir, CorruptShardNamesTheShard) {
  std::string dir = make_sharded(scratch_dir());
  write_file(dir + "/model-00002-of-00002.safetensors", std::string("\x05\0\0\0\0\0\0\0{bad}", 13));
  expect_open_error(dir, "model-00002-of-00002.safetensors at offset 8");
}

TEST(HfDir, SafeShardNames) {
  EXPECT_TRUE(is_safe_shard_name("model-00001-of-00002.safetensors"));
  EXPECT_FALSE(is_safe_shard_name(""));
  EXPECT_FALSE(is_safe_shard_name("."));
  EXPECT_FALSE(is_safe_shard_name(".."));
  EXPECT_FALSE(is_safe_shard_name("a/b"));
  EXPECT_FALSE(is_safe_shard_name("a\\b"));
  EXPECT_FALSE(is_safe_shard_name("..x"));
  EXPECT_FALSE(is_safe_shard_name(std::string("a\0b", 3)));
}
