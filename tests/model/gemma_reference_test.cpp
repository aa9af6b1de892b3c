// The real Gemma 3 270M Q4_K_M file against an independent reference: transformers running
// the same GGUF dequantized to float32 (tools/make_gemma_reference.py wrote the fixture).
// Greedy continuations must match token for token; logits within a stated tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "engine/generator.hpp"
#include "model/model.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

// Both sides compute in float32 from identical dequantized weights; what differs is the
// summation order through 18 layers.
constexpr float kLogitTolerance = 1e-3f;  // measured worst: 6e-5

struct GemmaReference : ::testing::Test {
  static void SetUpTestSuite() {
    std::ifstream f(test::golden_dir() + "/gemma3_270m/reference.json");
    ASSERT_TRUE(f) << "missing tests/golden/gemma3_270m/reference.json";
    ref = new nlohmann::json(nlohmann::json::parse(f));
    backend = make_cpu_backend(0).release();
    model = Model::load(test::default_model_path(), *backend).release();
  }
  static void TearDownTestSuite() {
    delete model;
    delete backend;
    delete ref;
  }
  static nlohmann::json* ref;
  static Backend* backend;
  static Model* model;
};
nlohmann::json* GemmaReference::ref = nullptr;
Backend* GemmaReference::backend = nullptr;
Model* GemmaReference::model = nullptr;

TEST_F(GemmaReference, TokenizesPromptsAsHuggingFace) {
  for (const auto& p : (*ref)["prompts"]) {
    auto ids = model->tokenizer().encode(p["text"].get<std::string>(), true, true);
    EXPECT_EQ(ids, p["prompt_ids"].get<std::vector<int32_t>>()) << p["name"];
  }
}

TEST_F(GemmaReference, GreedyContinuationsMatch) {
  for (const auto& p : (*ref)["prompts"]) {
    auto prompt = p["prompt_ids"].get<std::vector<int32_t>>();
    auto expect = p["greedy_ids"].get<std::vector<int32_t>>();
    Session s(*model, 256);
    GenerateOptions g;
    g.max_tokens = int(expect.size());
    g.sampling.temperature = 0;
    g.ignore_eos = true;
    EXPECT_EQ(s.generate(prompt, g).tokens, expect) << p["name"];
  }
}

TEST_F(GemmaReference, LogitsMatchAlongTheReferencePath) {
  const int64_t V = model->hparams().vocab;
  float worst = 0;
  for (const auto& p : (*ref)["prompts"]) {
    auto seq = p["prompt_ids"].get<std::vector<int32_t>>();
    const size_t n_prompt = seq.size();
    for (int32_t id : p["greedy_ids"]) seq.push_back(id);
    Session s(*model, 256);
    auto logits = s.prompt_logits(seq);  // teacher-forced: one prefill over prompt + reference tokens
    const auto& steps = p["topk"];
    for (size_t step = 0; step < steps.size(); ++step) {
      const float* row = logits.data() + (n_prompt - 1 + step) * size_t(V);
      for (const auto& pair : steps[step]) {
        int32_t id = pair[0].get<int32_t>();
        float want = pair[1].get<float>();
        float d = std::fabs(row[id] - want);
        worst = std::max(worst, d);
        EXPECT_LT(d, kLogitTolerance) << p["name"] << " step " << step << " token " << id;
      }
    }
  }
  std::printf("worst |logit - reference| over all top-32 entries: %g\n", worst);
}

}  // namespace
}  // namespace brisk
