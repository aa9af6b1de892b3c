// The forward pass on synthetic tiny models of every architecture, in both formats:
// logits match transformers (fixtures from tools/make_model_fixtures.py), GGUF and HF forms
// of the same weights agree, and results do not depend on threads or on batching.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "base/error.hpp"
#include "engine/score.hpp"
#include "engine_helpers.hpp"
#include "model/model.hpp"
#include "synthetic/synthetic.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

struct Fixture {
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [n, vocab]
  std::vector<int32_t> greedy;
};

Fixture load_fixture(const std::string& arch) {
  std::ifstream f(test::golden_dir() + "/models/" + arch + "_tiny.json");
  if (!f) throw std::runtime_error("missing fixture for " + arch + ": run tools/make_model_fixtures.py");
  auto j = nlohmann::json::parse(f);
  Fixture fx;
  fx.tokens = j.at("tokens").get<std::vector<int32_t>>();
  for (const auto& row : j.at("logits"))
    for (float v : row.get<std::vector<float>>()) fx.logits.push_back(v);
  fx.greedy = j.at("greedy").get<std::vector<int32_t>>();
  return fx;
}

std::string make_model(const std::string& arch, const std::string& format, DType dtype = DType::F32) {
  SyntheticSpec spec;
  spec.arch = arch;
  spec.format = format;
  spec.dtype = dtype;
  spec.seed = 1;
  std::string path = test::scratch_dir() + "/" + arch + (format == "gguf" ? ".gguf" : "_hf");
  write_synthetic_checkpoint(spec, path);
  return path;
}

std::vector<int32_t> greedy(Model& m, const std::vector<int32_t>& prompt, int n) {
  GenerateOptions g;
  g.max_tokens = n;
  g.sampling.temperature = 0;
  g.ignore_eos = true;
  return test::generate(m, prompt, g).tokens;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

class ForwardTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// float32 on both sides; differences come from summation order only.
constexpr float kLogitTolerance = 2e-4f;

TEST_P(ForwardTest, MatchesTransformers) {
  const auto& [arch, format] = GetParam();
  Fixture fx = load_fixture(arch);
  auto backend = make_cpu_backend(2);
  auto model = Model::load(make_model(arch, format), *backend);
  std::vector<float> logits = score_tokens(*model, fx.tokens);
  float d = max_abs_diff(logits, fx.logits);
  EXPECT_LT(d, kLogitTolerance) << arch << " " << format;
  EXPECT_EQ(greedy(*model, fx.tokens, int(fx.greedy.size())), fx.greedy) << arch << " " << format;
}

INSTANTIATE_TEST_SUITE_P(AllArchs, ForwardTest,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "qwen3", "gemma3"),
                                            ::testing::Values("gguf", "hf")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

TEST(Forward, ThreadCountDoesNotChangeResults) {
  std::string path = make_model("gemma3", "gguf", DType::Q8_0);
  std::vector<int32_t> prompt(40);
  std::iota(prompt.begin(), prompt.end(), 5);
  std::vector<float> ref;
  for (int threads : {1, 2, 3}) {
    auto backend = make_cpu_backend(threads);
    auto model = Model::load(path, *backend);
    auto logits = score_tokens(*model, prompt);
    if (ref.empty())
      ref = logits;
    else
      EXPECT_EQ(logits, ref) << threads << " threads";
  }
}

TEST(Forward, DecodeStepsEqualPrefill) {
  // The logits of a token must not depend on whether it ran in a batch or alone.
  for (const char* arch : {"llama", "gemma3"}) {
    auto backend = make_cpu_backend(2);
    auto model = Model::load(make_model(arch, "gguf", DType::Q8_0), *backend);
    std::vector<int32_t> prompt = {1, 17, 300, 42, 99, 7, 256, 3, 11, 12, 13};
    auto all = score_tokens(*model, prompt);
    Transformer& t = model->transformer();
    KvCache kv = t.new_kv_cache(64);
    const int64_t V = model->hparams().vocab;
    std::vector<float> one(static_cast<size_t>(V));
    for (int32_t p = 0; p < int32_t(prompt.size()); ++p) {
      t.forward(&prompt[size_t(p)], &p, 1, kv, one.data());
      std::vector<float> expect(all.begin() + p * V, all.begin() + (p + 1) * V);
      EXPECT_EQ(one, expect) << arch << " position " << p;
    }
    t.free_kv_cache(kv);
  }
}

TEST(Forward, PagedCacheInAnyBlockOrderGivesTheSameLogits) {
  // The same prompt through a cache whose slot owns blocks in pool order, and through one
  // whose table scatters the slot over a larger pool: attention reads through the table.
  auto backend = make_cpu_backend(2);
  auto model = Model::load(make_model("qwen2", "gguf", DType::Q8_0), *backend);
  Transformer& t = model->transformer();
  std::vector<int32_t> prompt(37);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 5) % 500);
  const int64_t V = model->hparams().vocab;
  auto run = [&](KvCache& kv) {
    std::vector<float> out;
    std::vector<float> logits(static_cast<size_t>(V) * 16);
    for (int32_t p0 = 0; p0 < int32_t(prompt.size()); p0 += 16) {
      const int32_t n = std::min<int32_t>(16, int32_t(prompt.size()) - p0);
      std::vector<int32_t> pos(static_cast<size_t>(n));
      std::iota(pos.begin(), pos.end(), p0);
      t.forward(&prompt[size_t(p0)], pos.data(), n, kv, logits.data(), true);
      out.insert(out.end(), logits.begin(), logits.begin() + n * V);
    }
    return out;
  };
  KvCache plain = t.new_kv_cache(40, 1, 0, 4);
  auto expect = run(plain);
  t.free_kv_cache(plain);
  KvCache paged = t.new_kv_cache(40, 1, 23, 4);
  ASSERT_EQ(paged.blocks_per_seq, 10);
  const std::vector<int32_t> blocks = {17, 3, 22, 0, 9, 12, 5, 20, 1, 14};
  backend->set_kv_blocks(paged, 0, blocks.data(), int(blocks.size()));
  EXPECT_EQ(run(paged), expect);
  const int32_t outside = 23;
  EXPECT_THROW(backend->set_kv_blocks(paged, 0, &outside, 1), Error);
  t.free_kv_cache(paged);
}

TEST(Forward, QuantizedWeightsStayClose) {
  // Quantized copies of the same weights give logits near the float ones.
  std::vector<int32_t> prompt = {1, 5, 9, 200, 301, 77};
  auto backend = make_cpu_backend(2);
  auto ref_model = Model::load(make_model("qwen2", "gguf", DType::F32), *backend);
  auto ref = score_tokens(*ref_model, prompt);
  for (DType dt : {DType::F16, DType::BF16, DType::Q8_0, DType::Q6_K, DType::Q5_K, DType::Q4_K, DType::Q5_0, DType::Q4_0}) {
    if (dt == DType::Q6_K || dt == DType::Q5_K || dt == DType::Q4_K) continue;  // hidden 64 < 256-element blocks
    auto m = Model::load(make_model("qwen2", "gguf", dt), *backend);
    auto logits = score_tokens(*m, prompt);
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) err += (logits[i] - ref[i]) * (logits[i] - ref[i]), norm += ref[i] * ref[i];
    EXPECT_LT(std::sqrt(err / norm), 0.25) << dtype_name(dt);
  }
}

TEST(Forward, ErrorsAreClear) {
  auto backend = make_cpu_backend(1);
  auto model = Model::load(make_model("llama", "gguf"), *backend);
  GenerateOptions g;
  EXPECT_THROW(test::generate(*model, {}, g, 16), Error);
  std::vector<int32_t> long_prompt(16, 5);
  try {
    test::generate(*model, long_prompt, g, 16);
    FAIL() << "a prompt as long as the context must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("16 tokens"), std::string::npos) << e.what();
  }
  std::vector<int32_t> bad_id = {1, 100000};
  EXPECT_THROW(test::generate(*model, bad_id, g, 16), Error);
  EXPECT_THROW(score_tokens(*model, bad_id), Error);
  EXPECT_THROW(test::generate(*model, {1}, g, 1 << 20), Error);  // beyond the trained context
}

TEST(Forward, UnknownArchitectureAndSizeAreRefused) {
  SyntheticSpec spec;
  spec.arch = "mamba";
  EXPECT_THROW(write_synthetic_checkpoint(spec, test::scratch_dir() + "/x.gguf"), Error);
  spec.arch = "llama";
  spec.size = "huge";
  EXPECT_THROW(write_synthetic_checkpoint(spec, test::scratch_dir() + "/x.gguf"), Error);
}

}  // namespace
}  // namespace brisk
