// The model runner on the CPU backend (the exact float32 mode, whose results do not depend
// on how rows are batched): packed and chunked prefill give the logits a prompt gets alone;
// a decode batch (padded into its power-of-two bucket) gives each row what it gets alone;
// a step that takes its tokens from the last step's ids equals one given them by the host;
// a scrambled block table changes nothing; the logit edits reach the sampler; bad steps are
// refused with an error.
#include "engine/model_runner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "base/error.hpp"
#include "model/model.hpp"
#include "synthetic/synthetic.hpp"
#include "engine_helpers.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

class ModelRunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = test::small_llama_q8(23, "runner_llama.gguf");
    backend_ = make_cpu_backend(0).release();
    model_ = Model::load(path, *backend_).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete backend_;
  }

  static RunnerConfig config(int slots, int max_batch, int64_t kv_blocks = 0) {
    RunnerConfig rc;
    rc.context = 64;
    rc.slots = slots;
    rc.max_batch = max_batch;
    rc.kv_blocks = kv_blocks;
    rc.min_scratch = 64;
    return rc;
  }
  static int64_t vocab() { return model_->hparams().vocab; }
  static std::vector<int32_t> prompt(int64_t n, int salt) {
    std::vector<int32_t> p;
    for (int64_t i = 0; i < n; ++i) p.push_back(int32_t((i * 37 + salt * 11 + 5) % vocab()));
    return p;
  }
  // Row r of the runner's last logits.
  static std::vector<float> row(const ModelRunner& r, int i) {
    std::vector<float> out(static_cast<size_t>(vocab()));
    backend_->to_host(r.logits() + int64_t(i) * vocab(), out.data(), vocab());
    return out;
  }
  static int32_t argmax(const std::vector<float>& v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
  }

  static inline Backend* backend_ = nullptr;
  static inline Model* model_ = nullptr;
};

TEST_F(ModelRunnerTest, PackedPrefillGivesEachPromptItsOwnLogits) {
  const std::vector<int64_t> lengths{23, 5, 40};
  std::vector<std::vector<int32_t>> prompts;
  for (size_t p = 0; p < lengths.size(); ++p) prompts.push_back(prompt(lengths[p], int(p)));
  std::vector<std::vector<float>> alone;
  std::vector<int32_t> alone_ids;
  {
    ModelRunner runner(model_->transformer(), config(3, 3));
    for (size_t p = 0; p < prompts.size(); ++p) {
      alone_ids.push_back(runner.prefill(prompts[p].data(), int64_t(prompts[p].size()), 0, int32_t(p), RowSampling{}));
      alone.push_back(row(runner, 0));
    }
  }
  ModelRunner runner(model_->transformer(), config(3, 3));
  std::vector<ModelRunner::PrefillPart> parts;
  for (size_t p = 0; p < prompts.size(); ++p)
    parts.push_back({prompts[p].data(), int64_t(prompts[p].size()), 0, int32_t(p), true, RowSampling{}});
  EXPECT_EQ(runner.prefill(parts), alone_ids);
  for (size_t p = 0; p < prompts.size(); ++p) EXPECT_EQ(row(runner, int(p)), alone[p]) << "prompt " << p;
}

TEST_F(ModelRunnerTest, ChunkedPrefillEqualsTheWholePrompt) {
  const std::vector<int32_t> p = prompt(41, 3);
  ModelRunner whole(model_->transformer(), config(1, 1));
  const int32_t id = whole.prefill(p.data(), int64_t(p.size()), 0, 0, RowSampling{});
  const std::vector<float> expected = row(whole, 0);

  ModelRunner chunked(model_->transformer(), config(1, 1));
  // Parts that complete no prompt sample nothing (and need no output head).
  EXPECT_TRUE(chunked.prefill({{p.data(), 16, 0, 0, false, RowSampling{}}}).empty());
  EXPECT_TRUE(chunked.prefill({{p.data() + 16, 16, 16, 0, false, RowSampling{}}}).empty());
  EXPECT_EQ(chunked.prefill({{p.data() + 32, 9, 32, 0, true, RowSampling{}}}), std::vector<int32_t>{id});
  EXPECT_EQ(row(chunked, 0), expected);
}

TEST_F(ModelRunnerTest, DecodeBatchGivesEachRowWhatItGetsAlone) {
  const int b = 3;  // runs in the bucket of 4, the last row repeated
  ModelRunner runner(model_->transformer(), config(b, 4));
  std::vector<int32_t> tokens, pos, seqs, ids(b);
  std::vector<RowSampling> params(b);
  for (int s = 0; s < b; ++s) {
    const std::vector<int32_t> p = prompt(7 + 9 * s, 10 + s);
    tokens.push_back(runner.prefill(p.data(), int64_t(p.size()), 0, s, RowSampling{}));
    pos.push_back(int32_t(p.size()));
    seqs.push_back(s);
  }
  std::vector<std::vector<float>> one;
  std::vector<int32_t> one_ids(b);
  for (int s = 0; s < b; ++s) {
    runner.decode(&tokens[s], &pos[s], &seqs[s], &params[s], 1, &one_ids[s]);
    one.push_back(row(runner, 0));
  }
  // The same positions again: each row rewrites its own cache slot with the same values.
  runner.decode(tokens.data(), pos.data(), seqs.data(), params.data(), b, ids.data());
  EXPECT_EQ(ids, one_ids);
  for (int s = 0; s < b; ++s) {
    EXPECT_EQ(row(runner, s), one[s]) << "row " << s;
    EXPECT_EQ(argmax(one[s]), one_ids[s]);
  }
}

TEST_F(ModelRunnerTest, TokensTakenFromTheLastStepEqualTokensFromTheHost) {
  const int b = 2;
  std::vector<int32_t> first(b), pos(b), seqs{0, 1}, ids(b), from{1, 0};
  const std::vector<RowSampling> params(b);
  auto start = [&](ModelRunner& r) {
    for (int s = 0; s < b; ++s) {
      const std::vector<int32_t> p = prompt(12 + 5 * s, 20 + s);
      first[s] = r.prefill(p.data(), int64_t(p.size()), 0, s, RowSampling{});
      pos[s] = int32_t(p.size());
    }
    r.decode(first.data(), pos.data(), seqs.data(), params.data(), b, ids.data());
    for (int32_t& p : pos) ++p;
  };
  // Row 0 continues with row 1's id and row 1 with row 0's: the device picks them.
  ModelRunner on_device(model_->transformer(), config(b, b));
  start(on_device);
  const std::vector<int32_t> last = ids;
  std::vector<int32_t> device_ids(b);
  on_device.launch(nullptr, from.data(), pos.data(), seqs.data(), params.data(), b);
  on_device.collect(device_ids.data());

  ModelRunner on_host(model_->transformer(), config(b, b));
  start(on_host);
  ASSERT_EQ(ids, last);
  const std::vector<int32_t> swapped{last[1], last[0]};
  std::vector<int32_t> host_ids(b);
  on_host.decode(swapped.data(), pos.data(), seqs.data(), params.data(), b, host_ids.data());
  EXPECT_EQ(device_ids, host_ids);
  EXPECT_EQ(row(on_device, 0), row(on_host, 0));
  EXPECT_EQ(row(on_device, 1), row(on_host, 1));
}

TEST_F(ModelRunnerTest, ScrambledBlockTableChangesNothing) {
  const std::vector<int32_t> p = prompt(50, 4);  // 4 blocks of 16
  int32_t pos = 50, seq = 0, id = -1;
  const RowSampling greedy;
  auto run = [&](const std::vector<int32_t>& blocks, const std::vector<int32_t>& decode_blocks) {
    ModelRunner r(model_->transformer(), config(1, 1, 8));
    r.set_blocks(0, blocks);
    const int32_t tok = r.prefill(p.data(), int64_t(p.size()), 0, 0, RowSampling{});
    const std::vector<float> after_prefill = row(r, 0);
    r.set_blocks(0, decode_blocks);
    r.decode(&tok, &pos, &seq, &greedy, 1, &id);
    return std::make_pair(after_prefill, row(r, 0));
  };
  const auto plain = run({0, 1, 2, 3}, {0, 1, 2, 3});
  const auto scrambled = run({6, 1, 7, 4}, {6, 1, 7, 4});
  EXPECT_EQ(plain.first, scrambled.first);
  EXPECT_EQ(plain.second, scrambled.second);
  // The table is what decode reads: pointed at blocks the prompt never wrote, it sees none of it.
  const auto elsewhere = run({6, 1, 7, 4}, {0, 2, 3, 5});
  EXPECT_NE(elsewhere.second, plain.second);
}

TEST_F(ModelRunnerTest, LogitEditsReachTheSampler) {
  const std::vector<int32_t> p = prompt(9, 5);
  ModelRunner runner(model_->transformer(), config(1, 1));
  const int32_t best = runner.prefill(p.data(), int64_t(p.size()), 0, 0, RowSampling{});
  std::vector<float> logits = row(runner, 0);
  logits[size_t(best)] = -INFINITY;
  const int32_t second = argmax(logits);

  int32_t pos = int32_t(p.size()) - 1, seq = 0, id = -1, tok = p.back();
  const RowSampling greedy;
  // Decoding the last prompt position again recomputes the same logits.
  const LogitEdit ban{0, best, 1.f, INFINITY};
  runner.decode(&tok, &pos, &seq, &greedy, 1, &id, {&ban, 1});
  EXPECT_EQ(id, second);
  EXPECT_EQ(row(runner, 0)[size_t(best)], -INFINITY);
  const int32_t favoured = (best + 17) % int32_t(vocab());
  const LogitEdit bias{0, favoured, 1.f, -1e6f};
  runner.decode(&tok, &pos, &seq, &greedy, 1, &id, {&bias, 1});
  EXPECT_EQ(id, favoured);
  runner.decode(&tok, &pos, &seq, &greedy, 1, &id);
  EXPECT_EQ(id, best);  // edits last one step
}

TEST_F(ModelRunnerTest, SeededSamplingRepeatsAndFollowsTheStep) {
  const std::vector<int32_t> p = prompt(9, 6);
  ModelRunner runner(model_->transformer(), config(1, 1));
  runner.prefill(p.data(), int64_t(p.size()), 0, 0, RowSampling{});
  int32_t pos = int32_t(p.size()) - 1, seq = 0, tok = p.back();
  RowSampling hot;
  hot.temperature = 5.f;  // flat enough that different draws pick different ids
  hot.seed = 99;
  std::vector<int32_t> first, again;
  for (int pass = 0; pass < 2; ++pass)
    for (uint64_t step = 0; step < 8; ++step) {
      hot.step = step;
      int32_t id = -1;
      runner.decode(&tok, &pos, &seq, &hot, 1, &id);
      (pass == 0 ? first : again).push_back(id);
    }
  EXPECT_EQ(first, again);
  EXPECT_GT(std::set<int32_t>(first.begin(), first.end()).size(), 1u);
}

TEST_F(ModelRunnerTest, BadStepsAreRefused) {
  ModelRunner runner(model_->transformer(), config(2, 2));
  const std::vector<int32_t> p = prompt(4, 7);
  std::vector<int32_t> tok{1, 2, 3}, pos{0, 0, 0}, seqs{0, 1, 0}, ids(3);
  const std::vector<RowSampling> params(3);
  EXPECT_THROW(runner.decode(tok.data(), pos.data(), seqs.data(), params.data(), 3, ids.data()), Error);
  EXPECT_THROW(runner.collect(ids.data()), Error);
  const int32_t bad_token = int32_t(vocab());
  EXPECT_THROW(runner.prefill(&bad_token, 1, 0, 0, RowSampling{}), Error);
  EXPECT_THROW(runner.prefill(p.data(), int64_t(p.size()), 62, 0, RowSampling{}), Error);  // past the context
  EXPECT_THROW(runner.prefill(p.data(), int64_t(p.size()), 0, 2, RowSampling{}), Error);   // no such slot
  EXPECT_THROW(runner.prefill(std::vector<ModelRunner::PrefillPart>{}), Error);
  EXPECT_THROW(ModelRunner(model_->transformer(), config(1, 0)), Error);
  // A refused step leaves the runner usable.
  EXPECT_NO_THROW(runner.prefill(p.data(), int64_t(p.size()), 0, 0, RowSampling{}));
}

}  // namespace
}  // namespace brisk
