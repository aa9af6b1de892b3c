// Loading a model from a file that is not one brisk can run: each case is a brisk::Error
// that says what is wrong, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "crafted_checkpoint.hpp"
#include "base/error.hpp"
#include "format/gguf_writer.hpp"
#include "model/model.hpp"
#include "synthetic/synthetic.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

// Loading `path` fails with `code`, and the message holds every needle (the key and its value).
void expect_error(const std::string& path, ErrorCode code, std::initializer_list<std::string> needles) {
  auto backend = make_cpu_backend(1);
  try {
    Model::load(path, *backend);
    ADD_FAILURE() << "loaded " << path << " (expected an error naming " << *needles.begin() << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& needle : needles) EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void expect_error(const std::string& path, ErrorCode code, const std::string& needle) {
  expect_error(path, code, {needle});
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(LoadErrors, UnknownGgufArchitecture) {
  GgufWriter w;
  w.set_string("general.architecture", "mamba");
  w.add_tensor("token_embd.weight", DType::F32, {4, 8}, std::vector<uint8_t>(4 * 8 * 4));
  std::string path = test::scratch_dir() + "/mamba.gguf";
  w.write(path);
  expect_error(path, ErrorCode::kUnsupported, "'mamba' is not supported");
}

TEST(LoadErrors, UnknownHfModelType) {
  SyntheticSpec spec;
  spec.arch = "qwen2";
  spec.format = "hf";
  std::string dir = test::scratch_dir() + "/bert";
  write_synthetic_checkpoint(spec, dir);
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  cfg["model_type"] = "bert";
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kUnsupported, "'bert' is not supported");
}

TEST(LoadErrors, MissingTensorAndWrongShape) {
  SyntheticSpec spec;
  spec.arch = "llama";
  spec.format = "hf";
  std::string dir = test::scratch_dir() + "/llama";
  write_synthetic_checkpoint(spec, dir);
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  cfg["num_hidden_layers"] = 3;  // the file has two
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, {"num_hidden_layers = 3", "no tensors for layer 2"});
  cfg["num_hidden_layers"] = 2;
  cfg["intermediate_size"] = 96;
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "expected [96, 64]");
}

TEST(LoadErrors, AbsurdHyperparameters) {
  SyntheticSpec spec;
  spec.arch = "qwen3";
  spec.format = "hf";
  std::string dir = test::scratch_dir() + "/qwen3";
  write_synthetic_checkpoint(spec, dir);
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  cfg["num_key_value_heads"] = 3;  // 4 heads are not a multiple of 3
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "not a multiple");
  cfg["num_key_value_heads"] = 2;
  cfg["hidden_size"] = -64;
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, {"hidden_size = -64", "must be in 1.."});
  cfg["hidden_size"] = "sixty-four";
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "wrong type");
}

TEST(LoadErrors, TruncatedModelFileAtManyPoints) {
  SyntheticSpec spec;
  spec.arch = "gemma3";
  spec.dtype = DType::Q8_0;
  std::string path = test::scratch_dir() + "/gemma.gguf";
  write_synthetic_checkpoint(spec, path);
  auto bytes = read_file(path);
  std::string cut = path + ".cut";
  int refused = 0;
  for (size_t len = 0; len < bytes.size(); len += 1 + len / 7) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(len));
    auto backend = make_cpu_backend(1);
    try {
      Model::load(cut, *backend);
      ADD_FAILURE() << "a file cut at " << len << " of " << bytes.size() << " bytes loaded";
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 50);
}

// ---- Crafted GGUF metadata (issue item 8): each value is refused naming its key ----

std::string synthetic_gguf(const std::string& arch) {
  SyntheticSpec spec;
  spec.arch = arch;
  std::string path = test::scratch_dir() + "/" + arch + ".gguf";
  write_synthetic_checkpoint(spec, path);
  return path;
}

// A variant of `src` with `edits`, which must fail to load with `code` and every needle.
void expect_variant_error(const std::string& src, const test::MetaEdits& edits, ErrorCode code,
                          std::initializer_list<std::string> needles,
                          const std::function<bool(const std::string&)>& keep = {}) {
  const std::string path = test::scratch_dir() + "/variant.gguf";
  test::rewrite_gguf(src, path, edits, keep);
  expect_error(path, code, needles);
  std::filesystem::remove(path);
}

TEST(LoadErrors, GgufUnchangedCopyLoads) {  // the rewriting itself breaks nothing
  const std::string src = synthetic_gguf("gemma3"), path = test::scratch_dir() + "/copy.gguf";
  test::rewrite_gguf(src, path, {});
  auto backend = make_cpu_backend(1);
  EXPECT_NO_THROW(Model::load(path, *backend));
}

TEST(LoadErrors, GgufRopeBase) {
  const std::string src = synthetic_gguf("gemma3"), key = "gemma3.rope.freq_base";
  expect_variant_error(src, {{key, test::meta_f32(0.f)}}, ErrorCode::kFormat, {key + " = 0"});
  expect_variant_error(src, {{key, test::meta_f32(-10000.f)}}, ErrorCode::kFormat, {key + " = -10000"});
  expect_variant_error(src, {{key, test::meta_f32(NAN)}}, ErrorCode::kFormat, {key + " = nan"});
  expect_variant_error(src, {{key, test::meta_f32(INFINITY)}}, ErrorCode::kFormat, {key + " = inf"});
  expect_variant_error(src, {{"gemma3.rope.freq_base_swa", test::meta_f32(0.f)}}, ErrorCode::kFormat,
                       {"gemma3.rope.freq_base_swa = 0"});
  expect_variant_error(src, {{key, test::meta_string("high")}}, ErrorCode::kFormat, {key, "not a number"});
}

TEST(LoadErrors, GgufRopeScaling) {
  const std::string src = synthetic_gguf("llama"), key = "llama.rope.scaling.";
  expect_variant_error(src, {{key + "type", test::meta_string("linear")}, {key + "factor", test::meta_f32(0.f)}},
                       ErrorCode::kFormat, {key + "factor = 0"});
  expect_variant_error(src, {{key + "type", test::meta_string("linear")}, {key + "factor", test::meta_f32(NAN)}},
                       ErrorCode::kFormat, {key + "factor = nan"});
  expect_variant_error(src, {{key + "type", test::meta_string("yarn")}}, ErrorCode::kUnsupported,
                       {key + "type = yarn"});
  expect_variant_error(src, {{"llama.rope.dimension_count", test::meta_u32(8)}}, ErrorCode::kUnsupported,
                       {"llama.rope.dimension_count = 8"});
}

TEST(LoadErrors, GgufNormEpsilon) {
  const std::string src = synthetic_gguf("qwen3"), key = "qwen3.attention.layer_norm_rms_epsilon";
  expect_variant_error(src, {{key, test::meta_f32(NAN)}}, ErrorCode::kFormat, {key + " = nan"});
  expect_variant_error(src, {{key, test::meta_f32(-1e-6f)}}, ErrorCode::kFormat, {key + " = -1e-06"});
  expect_variant_error(src, {{key, test::meta_f32(0.f)}}, ErrorCode::kFormat, {key + " = 0"});
  expect_variant_error(src, {{key, test::meta_f32(1.f)}}, ErrorCode::kFormat, {key + " = 1"});
}

TEST(LoadErrors, GgufSlidingWindowAndSoftcap) {
  const std::string src = synthetic_gguf("gemma3"), key = "gemma3.attention.sliding_window";
  expect_variant_error(src, {{key, test::meta_u32(0)}}, ErrorCode::kFormat, {key + " = 0"});
  expect_variant_error(src, {{key, test::meta_i32(-512)}}, ErrorCode::kFormat, {key + " = -512"});
  expect_variant_error(src, {{key, std::nullopt}}, ErrorCode::kFormat, {"missing metadata key " + key});
  expect_variant_error(src, {{"gemma3.final_logit_softcapping", test::meta_f32(30.f)}}, ErrorCode::kUnsupported,
                       {"gemma3.final_logit_softcapping = 30"});
  expect_variant_error(src, {{"gemma3.attn_logit_softcapping", test::meta_f32(NAN)}}, ErrorCode::kFormat,
                       {"gemma3.attn_logit_softcapping = nan"});
}

TEST(LoadErrors, GgufHeadsAndSizes) {
  const std::string src = synthetic_gguf("llama");  // 4 heads, 2 kv heads, head dim 16, hidden 64
  expect_variant_error(src, {{"llama.attention.head_count", test::meta_u32(0)}}, ErrorCode::kFormat,
                       {"llama.attention.head_count = 0"});
  expect_variant_error(src, {{"llama.attention.head_count_kv", test::meta_u32(3)}}, ErrorCode::kFormat,
                       {"llama.attention.head_count_kv = 3", "not a multiple"});
  expect_variant_error(src, {{"llama.attention.head_count_kv", test::meta_u32(8)}}, ErrorCode::kFormat,
                       {"llama.attention.head_count_kv = 8"});
  expect_variant_error(src, {{"llama.attention.key_length", test::meta_u32(15)}}, ErrorCode::kFormat,
                       {"llama.attention.key_length = 15", "even"});
  expect_variant_error(src, {{"llama.embedding_length", test::meta_u64(uint64_t(1) << 40)}}, ErrorCode::kFormat,
                       {"llama.embedding_length = 1099511627776"});
  expect_variant_error(src, {{"llama.attention.head_count", test::meta_u64((uint64_t(1) << 32) + 4)}},
                       ErrorCode::kFormat, {"llama.attention.head_count = 4294967300", "32-bit"});
  expect_variant_error(src, {{"llama.feed_forward_length", test::meta_i32(-128)}}, ErrorCode::kFormat,
                       {"llama.feed_forward_length = -128"});
  expect_variant_error(src, {{"llama.context_length", test::meta_u32(0)}}, ErrorCode::kFormat,
                       {"llama.context_length = 0"});
  expect_variant_error(src, {{"llama.attention.head_count_kv", test::meta_numbers(MetaType::U32, {2, 1})}},
                       ErrorCode::kUnsupported, {"llama.attention.head_count_kv differs between layers"});
  expect_variant_error(src, {{"llama.vocab_size", test::meta_u32(500)}}, ErrorCode::kFormat,
                       {"llama.vocab_size = 500", "512 rows"});
}

TEST(LoadErrors, GgufBlockCountAgainstTensors) {
  const std::string src = synthetic_gguf("qwen2"), key = "qwen2.block_count";  // two blocks in the file
  expect_variant_error(src, {{key, test::meta_u32(1)}}, ErrorCode::kFormat, {key + " = 1", "blk.1."});
  expect_variant_error(src, {{key, test::meta_u32(3)}}, ErrorCode::kFormat, {key + " = 3", "no tensors for layer 2"});
  // A stray tensor of a block beyond the count, and a block with no tensors at all.
  auto drop_blk0 = [](const std::string& name) { return name.rfind("blk.0.", 0) != 0; };
  expect_variant_error(src, {}, ErrorCode::kFormat, {key + " = 2", "no tensors for layer 0"}, drop_blk0);
}

// The synthetic vocabulary's token list, for edits of it.
std::vector<std::string> gguf_tokens(const std::string& path) {
  return test::gguf_metadata(path).at("tokenizer.ggml.tokens").strs;
}

TEST(LoadErrors, GgufSpecialTokenIds) {
  const std::string src = synthetic_gguf("qwen3");
  const auto n = uint32_t(gguf_tokens(src).size());
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.padding_token_id", "tokenizer.ggml.unknown_token_id",
                          "tokenizer.ggml.seperator_token_id"})
    expect_variant_error(src, {{key, test::meta_u32(n)}}, ErrorCode::kFormat,
                         {std::string(key) + " = " + std::to_string(n), "outside the vocabulary"});
  expect_variant_error(src, {{"tokenizer.ggml.eos_token_id", test::meta_i32(-1)}}, ErrorCode::kFormat,
                       {"tokenizer.ggml.eos_token_id = -1"});
  expect_variant_error(src, {{"tokenizer.ggml.add_bos_token", test::meta_bool(true)},
                             {"tokenizer.ggml.bos_token_id", std::nullopt}},
                       ErrorCode::kFormat, {"tokenizer.ggml.add_bos_token", "bos_token_id is missing"});
}

TEST(LoadErrors, GgufVocabularyAgainstEmbedding) {
  const std::string src = synthetic_gguf("gemma3");
  auto meta = test::gguf_metadata(src);
  auto tokens = meta.at("tokenizer.ggml.tokens").strs;
  auto types = meta.at("tokenizer.ggml.token_type").nums;
  const std::string rows = std::to_string(tokens.size());
  tokens.pop_back();
  types.pop_back();
  expect_variant_error(src, {{"tokenizer.ggml.tokens", test::meta_strings(tokens)},
                             {"tokenizer.ggml.token_type", test::meta_numbers(MetaType::I32, types)}},
                       ErrorCode::kFormat, {"tokenizer.ggml.tokens has " + std::to_string(tokens.size()), rows + " rows"});
  tokens.push_back("<|extra_a|>");
  tokens.push_back("<|extra_b|>");
  types.push_back(3);
  types.push_back(3);
  expect_variant_error(src, {{"tokenizer.ggml.tokens", test::meta_strings(tokens)},
                             {"tokenizer.ggml.token_type", test::meta_numbers(MetaType::I32, types)}},
                       ErrorCode::kFormat, {"tokenizer.ggml.tokens has " + std::to_string(tokens.size()), rows + " rows"});
}

TEST(LoadErrors, GgufByteLevelVocabularyWithoutByteTokens) {
  const std::string src = synthetic_gguf("qwen2");
  auto tokens = gguf_tokens(src);
  auto it = std::find(tokens.begin(), tokens.end(), "\xC4\x80");  // 'Ā', GPT-2's stand-in for byte 0x00
  ASSERT_NE(it, tokens.end());
  *it = "<|no_byte_00|>";
  expect_variant_error(src, {{"tokenizer.ggml.tokens", test::meta_strings(tokens)}}, ErrorCode::kFormat,
                       {"tokenizer.ggml.tokens lacks 1 of the 256 byte tokens", "0x00"});
}

// The synthetic model with a SentencePiece vocabulary of the same size: specials, the 256
// byte tokens, then pieces.
test::MetaEdits spm_vocab_edits(size_t n, int drop_byte) {
  std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>"};
  std::vector<double> types = {3, 3, 3, 2}, scores(n, 0.0);
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(b == drop_byte ? "<unused_byte>" : name);
    types.push_back(6);
  }
  for (size_t i = 0; tokens.size() < n; ++i) {
    tokens.push_back("\xE2\x96\x81piece" + std::to_string(i));
    types.push_back(1);
  }
  return {{"tokenizer.ggml.model", test::meta_string("llama")},
          {"tokenizer.ggml.tokens", test::meta_strings(tokens)},
          {"tokenizer.ggml.token_type", test::meta_numbers(MetaType::I32, types)},
          {"tokenizer.ggml.scores", test::meta_numbers(MetaType::F32, scores)},
          {"tokenizer.ggml.merges", std::nullopt},
          {"tokenizer.ggml.pre", std::nullopt},
          {"tokenizer.ggml.unknown_token_id", test::meta_u32(3)},
          {"tokenizer.ggml.add_space_prefix", test::meta_bool(false)}};
}

TEST(LoadErrors, GgufSpmByteFallbackIncomplete) {
  const std::string src = synthetic_gguf("gemma3");
  const size_t n = gguf_tokens(src).size();
  const std::string ok = test::scratch_dir() + "/spm.gguf";
  test::rewrite_gguf(src, ok, spm_vocab_edits(n, -1));
  auto backend = make_cpu_backend(1);
  auto model = Model::load(ok, *backend);  // complete: loads, and a byte outside the pieces encodes
  EXPECT_EQ(model->tokenizer().encode("\x01", false), std::vector<int32_t>{4 + 1});
  expect_variant_error(src, spm_vocab_edits(n, 0x41), ErrorCode::kFormat,
                       {"tokenizer.ggml.tokens lacks 1 of the 256 byte tokens", "<0x41>"});
}

// The probe: variants of the real Gemma 3 270M file.
TEST(LoadErrors, RealGemmaVariants) {
  const std::string src = test::default_model_path();
  auto tokens = gguf_tokens(src);
  const std::string n = std::to_string(tokens.size());
  expect_variant_error(src, {{"gemma3.rope.freq_base", test::meta_f32(NAN)}}, ErrorCode::kFormat,
                       {"gemma3.rope.freq_base = nan"});
  expect_variant_error(src, {{"gemma3.block_count", test::meta_u32(17)}}, ErrorCode::kFormat,
                       {"gemma3.block_count = 17", "blk.17."});
  expect_variant_error(src, {{"tokenizer.ggml.eos_token_id", test::meta_u32(uint32_t(tokens.size()))}},
                       ErrorCode::kFormat, {"tokenizer.ggml.eos_token_id = " + n});
  auto it = std::find(tokens.begin(), tokens.end(), "<0x0A>");
  ASSERT_NE(it, tokens.end());
  *it = "<unused_newline_byte>";
  expect_variant_error(src, {{"tokenizer.ggml.tokens", test::meta_strings(tokens)}}, ErrorCode::kFormat,
                       {"tokenizer.ggml.tokens lacks 1 of the 256 byte tokens", "<0x0A>"});
}

// ---- Crafted HF directories: config.json, generation_config.json, tokenizer files ----

std::string synthetic_hf(const std::string& arch) {
  SyntheticSpec spec;
  spec.arch = arch;
  spec.format = "hf";
  std::string dir = test::scratch_dir() + "/" + arch + "_hf";
  write_synthetic_checkpoint(spec, dir);
  return dir;
}

// Applies `edit` to dir/file, expects the load to fail naming `needles`, then restores the file.
void expect_json_variant_error(const std::string& dir, const std::string& file,
                               const std::function<void(nlohmann::json&)>& edit, ErrorCode code,
                               std::initializer_list<std::string> needles) {
  const auto original = test::read_json_file(dir + "/" + file);
  test::edit_json(dir + "/" + file, edit);
  expect_error(dir, code, needles);
  test::write_json_file(dir + "/" + file, original);
}

TEST(LoadErrors, HfRopeNormAndScale) {
  const std::string dir = synthetic_hf("gemma3");
  auto set = [](const char* key, nlohmann::json v) { return [=](nlohmann::json& j) { j[key] = v; }; };
  expect_json_variant_error(dir, "config.json", set("rope_theta", 0), ErrorCode::kFormat, {"rope_theta = 0"});
  expect_json_variant_error(dir, "config.json", set("rope_theta", -5.0), ErrorCode::kFormat, {"rope_theta = -5"});
  expect_json_variant_error(dir, "config.json", set("rope_local_base_freq", 0.5), ErrorCode::kFormat,
                            {"rope_local_base_freq = 0.5"});
  expect_json_variant_error(dir, "config.json", set("rms_norm_eps", -1e-6), ErrorCode::kFormat,
                            {"rms_norm_eps = -1e-06"});
  expect_json_variant_error(dir, "config.json", set("rms_norm_eps", 1e300), ErrorCode::kFormat, {"rms_norm_eps = inf"});
  expect_json_variant_error(dir, "config.json", set("sliding_window", 0), ErrorCode::kFormat, {"sliding_window = 0"});
  expect_json_variant_error(dir, "config.json", set("query_pre_attn_scalar", 0), ErrorCode::kFormat,
                            {"query_pre_attn_scalar = 0"});
  expect_json_variant_error(dir, "config.json", set("final_logit_softcapping", 30.0), ErrorCode::kUnsupported,
                            {"final_logit_softcapping = 30"});
  expect_json_variant_error(dir, "config.json", set("layer_types", nlohmann::json::array({"full_attention"})),
                            ErrorCode::kFormat, {"layer_types = 1 entries"});
  expect_json_variant_error(dir, "config.json", set("num_hidden_layers", 2.5), ErrorCode::kFormat,
                            {"'num_hidden_layers' has the wrong type"});
  expect_json_variant_error(dir, "config.json", set("hidden_size", 1e12), ErrorCode::kFormat,
                            {"hidden_size = 1000000000000"});
}

TEST(LoadErrors, HfLlama3RopeScaling) {
  const std::string dir = synthetic_hf("llama");
  auto scaling = [](nlohmann::json s) {
    return [=](nlohmann::json& j) {
      j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
      j["rope_scaling"].update(s);
    };
  };
  expect_json_variant_error(dir, "config.json", scaling({{"factor", 0}}), ErrorCode::kFormat,
                            {"rope_scaling.factor = 0"});
  expect_json_variant_error(dir, "config.json", scaling({{"high_freq_factor", 1.0}}), ErrorCode::kFormat,
                            {"rope_scaling.high_freq_factor = 1"});
  expect_json_variant_error(dir, "config.json", scaling({{"original_max_position_embeddings", 0}}),
                            ErrorCode::kFormat, {"rope_scaling.original_max_position_embeddings = 0"});
  expect_json_variant_error(dir, "config.json", scaling({{"rope_type", "yarn"}}), ErrorCode::kUnsupported,
                            {"rope_scaling.rope_type = yarn"});
}

TEST(LoadErrors, HfLayersAndVocabularyAgainstTensors) {
  const std::string dir = synthetic_hf("qwen2");  // two layers, 512 embedding rows
  auto set = [](const char* key, nlohmann::json v) { return [=](nlohmann::json& j) { j[key] = v; }; };
  expect_json_variant_error(dir, "config.json", set("num_hidden_layers", 1), ErrorCode::kFormat,
                            {"num_hidden_layers = 1", "model.layers.1."});
  expect_json_variant_error(dir, "config.json", set("vocab_size", 500), ErrorCode::kFormat,
                            {"vocab_size = 500", "512 rows"});
  // A tokenizer larger than the embedding: an added token past the last row.
  expect_json_variant_error(dir, "tokenizer.json", [](nlohmann::json& j) {
    j["added_tokens"].push_back({{"id", 512}, {"content", "<|past_the_end|>"}, {"special", true}});
  }, ErrorCode::kFormat, {"tokenizer.json has 513 tokens", "vocab_size = 512"});
}

TEST(LoadErrors, HfEmbeddingPaddedBeyondTheTokenizerLoads) {
  // Qwen2.5's shape: 151,936 embedding rows for 151,665 tokens. Drop the last 12 reserved tokens.
  const std::string dir = synthetic_hf("qwen2");
  test::edit_json(dir + "/tokenizer.json", [](nlohmann::json& j) {
    auto& added = j["added_tokens"];
    for (int k = 0; k < 12; ++k) {
      j["model"]["vocab"].erase(added.back()["content"].get<std::string>());
      added.erase(added.size() - 1);
    }
  });
  auto backend = make_cpu_backend(1);
  auto model = Model::load(dir, *backend);
  EXPECT_EQ(model->tokenizer().vocab_size(), 500);
  EXPECT_EQ(model->hparams().vocab, 512);
}

TEST(LoadErrors, HfSpecialTokenIds) {
  const std::string dir = synthetic_hf("llama");
  auto set = [](const char* key, nlohmann::json v) { return [=](nlohmann::json& j) { j[key] = v; }; };
  expect_json_variant_error(dir, "generation_config.json", set("eos_token_id", nlohmann::json::array({2, 512})),
                            ErrorCode::kFormat, {"generation_config.json eos_token_id = 512"});
  expect_json_variant_error(dir, "generation_config.json", set("bos_token_id", -1), ErrorCode::kFormat,
                            {"generation_config.json bos_token_id = -1"});
  expect_json_variant_error(dir, "config.json", set("pad_token_id", 100000), ErrorCode::kFormat,
                            {"config.json pad_token_id = 100000"});
  expect_json_variant_error(dir, "config.json", set("eos_token_id", "two"), ErrorCode::kFormat,
                            {"config.json eos_token_id"});
  expect_json_variant_error(dir, "tokenizer_config.json", set("eos_token", "<|no_such_token|>"), ErrorCode::kFormat,
                            {"tokenizer_config.json eos_token '<|no_such_token|>'"});
  expect_json_variant_error(dir, "tokenizer.json", [](nlohmann::json& j) { j["model"]["unk_token"] = "<unk>"; },
                            ErrorCode::kFormat, {"model.unk_token '<unk>'"});
}

TEST(LoadErrors, HfByteLevelVocabularyWithoutByteTokens) {
  const std::string dir = synthetic_hf("qwen3");
  expect_json_variant_error(dir, "tokenizer.json", [](nlohmann::json& j) {
    auto& vocab = j["model"]["vocab"];
    vocab["<|was_byte_20|>"] = vocab["\xC4\xA0"];  // 'Ġ': the space byte
    vocab.erase("\xC4\xA0");
  }, ErrorCode::kFormat, {"tokenizer.json model.vocab lacks 1 of the 256 byte tokens", "0x20"});
}

}  // namespace
}  // namespace brisk
