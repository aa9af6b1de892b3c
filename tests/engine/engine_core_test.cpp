// The engine loop (continuous batching) on the CPU backend with a synthetic Llama-shaped model
// (Q8_0, int8 activations: the serving configuration): many concurrent requests give each
// exactly the tokens it gets alone; seeds reproduce; cancellation frees the slot; the queue
// is bounded; impossible requests are refused at once; logprobs and penalties work; prompts
// with a common prefix share its KV blocks; a small KV pool makes requests wait, not fail.
#include "engine/engine_core.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/error.hpp"
#include "synthetic/synthetic.hpp"
#include "engine_helpers.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

// parallel sequences of `context` positions, prefill chunks of `chunk`, a queue of `queue`.
EngineOptions options(int parallel, int64_t context, int64_t chunk, size_t queue) {
  EngineOptions o;
  o.parallel = parallel;
  o.context = context;
  o.prefill_chunk = chunk;
  o.max_queue = queue;
  return o;
}

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = test::small_llama_q8(11, "sched_llama.gguf");
    backend_ = make_cpu_backend(0, /*int8_activations=*/true).release();
    model_ = Model::load(path, *backend_).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete backend_;
  }
  static inline Backend* backend_ = nullptr;
  static inline Model* model_ = nullptr;
};

// A request and what came back for it.
struct Tracked {
  std::shared_ptr<Request> req = std::make_shared<Request>();
  std::vector<int32_t> tokens;
  std::vector<TokenEvent> events;
  RequestResult result;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;

  Tracked(std::vector<int32_t> prompt, int max_tokens, float temperature = 0.f, uint64_t seed = 1) {
    req->prompt = std::move(prompt);
    req->opts.max_tokens = max_tokens;
    req->opts.ignore_eos = true;
    req->opts.sampling.temperature = temperature;
    req->opts.sampling.seed = seed;
    req->on_token = [this](const TokenEvent& e) {
      tokens.push_back(e.id);
      events.push_back(e);
    };
    req->on_done = [this](const RequestResult& r) {
      std::lock_guard<std::mutex> lock(mu);
      result = r;
      done = true;
      cv.notify_all();
    };
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return done; })) << "request never finished";
  }
};

std::vector<int32_t> prompt_for(int i) {
  std::vector<int32_t> p;
  for (int k = 0; k < 5 + (i * 7) % 40; ++k) p.push_back(int32_t((i * 131 + k * 17 + 3) % 4000 + 10));
  return p;
}

std::vector<int32_t> alone(Model& m, const std::vector<int32_t>& prompt, int max_tokens, float temperature = 0.f,
                           uint64_t seed = 1) {
  EngineCore s(m, options(1, 256, 16, 4));
  Tracked r(prompt, max_tokens, temperature, seed);
  EXPECT_TRUE(s.submit(r.req));
  r.wait();
  return r.tokens;
}

class SchedulerWarmUpTest : public SchedulerTest, public ::testing::WithParamInterface<bool> {};

// (With and without a warm-up, whose KV rows must never reach a request.)
TEST_P(SchedulerWarmUpTest, ConcurrentRequestsMatchTheSameRequestAlone) {
  constexpr int kRequests = 32;
  std::vector<std::unique_ptr<Tracked>> runs;
  {
    EngineOptions o = options(8, 256, 16, 64);
    o.warm_up = GetParam();
    EngineCore s(*model_, o);
    for (int i = 0; i < kRequests; ++i) {
      runs.push_back(std::make_unique<Tracked>(prompt_for(i), 12 + i % 5, i % 4 == 3 ? 0.8f : 0.f, 100 + i));
      ASSERT_TRUE(s.submit(runs.back()->req));
    }
    for (auto& r : runs) r->wait();
    const EngineStats st = s.stats();
    EXPECT_EQ(st.running, 0);
    EXPECT_EQ(st.finished.at("length"), uint64_t(kRequests));
  }
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(runs[size_t(i)]->result.finish_reason, "length");
    EXPECT_EQ(runs[size_t(i)]->tokens,
              alone(*model_, prompt_for(i), 12 + i % 5, i % 4 == 3 ? 0.8f : 0.f, uint64_t(100 + i)))
        << "request " << i;
  }
  // Greedy runs of different prompts should differ from each other (the check has teeth).
  EXPECT_NE(runs[0]->tokens, runs[1]->tokens);
}

INSTANTIATE_TEST_SUITE_P(Scheduler, SchedulerWarmUpTest, ::testing::Bool());

// Decode steps overlap the host's work (the next step is launched before the last one's ids
// are handed out), so each request's tokens must still be exactly those of a plain
// one-sequence engine, whatever max_tokens ends it, and a request cancelled from its own
// token callback must get nothing more, while the others in its batch go on unchanged.
TEST_F(SchedulerTest, OverlappedStepsGiveWhatOneSequenceGets) {
  constexpr int kRequests = 6;
  std::vector<std::unique_ptr<Tracked>> runs;
  {
    EngineCore s(*model_, options(kRequests, 256, 16, 8));
    for (int i = 0; i < kRequests; ++i) {
      runs.push_back(std::make_unique<Tracked>(prompt_for(i + 40), 1 + i * 3));
      if (i == 4) {
        Tracked* r = runs.back().get();
        r->req->on_token = [r](const TokenEvent& e) {
          r->tokens.push_back(e.id);
          if (r->tokens.size() == 2) r->req->cancelled = true;
        };
      }
      ASSERT_TRUE(s.submit(runs.back()->req));
    }
    for (auto& r : runs) r->wait();
  }
  for (int i = 0; i < kRequests; ++i) {
    std::vector<int32_t> expect = alone(*model_, prompt_for(i + 40), 1 + i * 3);
    if (i == 4) {
      EXPECT_EQ(runs[size_t(i)]->result.finish_reason, "cancelled");
      expect.resize(2);
    } else {
      EXPECT_EQ(runs[size_t(i)]->result.finish_reason, "length");
    }
    EXPECT_EQ(runs[size_t(i)]->tokens, expect) << "request " << i;
  }
}

TEST_F(SchedulerTest, SeedsReproduceAndDiffer) {
  auto a = alone(*model_, prompt_for(3), 24, 1.0f, 7), b = alone(*model_, prompt_for(3), 24, 1.0f, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, alone(*model_, prompt_for(3), 24, 1.0f, 8));
}

TEST_F(SchedulerTest, CancelledRequestFreesItsSlot) {
  EngineCore s(*model_, options(2, 512, 16, 4));
  Tracked r(prompt_for(1), 400);
  r.req->on_token = [&](const TokenEvent& e) {
    r.tokens.push_back(e.id);
    if (r.tokens.size() == 3) r.req->cancelled = true;  // as a disconnecting client does
  };
  ASSERT_TRUE(s.submit(r.req));
  r.wait();
  EXPECT_EQ(r.result.finish_reason, "cancelled");
  EXPECT_LT(r.tokens.size(), 10u);
  Tracked after(prompt_for(2), 4);  // and the server keeps serving
  ASSERT_TRUE(s.submit(after.req));
  after.wait();
  EXPECT_EQ(after.result.finish_reason, "length");
  EXPECT_EQ(s.stats().running, 0);
  EXPECT_EQ(s.stats().finished.at("cancelled"), 1u);
}

TEST_F(SchedulerTest, QueueIsBoundedAndEveryAcceptedRequestFinishes) {
  EngineCore s(*model_, options(1, 256, 16, 2));
  std::vector<std::unique_ptr<Tracked>> runs;
  int refused = 0;
  for (int i = 0; i < 12; ++i) {
    auto r = std::make_unique<Tracked>(prompt_for(i), 30);
    if (s.submit(r->req)) runs.push_back(std::move(r));
    else ++refused;
  }
  EXPECT_GT(refused, 0);
  EXPECT_LE(runs.size(), 3u + 1u);
  for (auto& r : runs) r->wait();
  for (auto& r : runs) EXPECT_EQ(r->result.finish_reason, "length");
}

TEST_F(SchedulerTest, RefusesWhatCanNeverRun) {
  EngineCore s(*model_, options(1, 64, 16, 2));
  Tracked empty({}, 4), too_long(std::vector<int32_t>(64, 5), 4), bad_id({1, 999999}, 4);
  for (Tracked* r : {&empty, &too_long, &bad_id}) {
    try {
      s.submit(r->req);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
  Tracked fits(std::vector<int32_t>(60, 5), 100);  // stops at the context instead
  ASSERT_TRUE(s.submit(fits.req));
  fits.wait();
  EXPECT_EQ(fits.result.finish_reason, "length");
  EXPECT_EQ(fits.tokens.size(), 5u);  // positions 60..63 fill the cache; the 5th needs no slot
}

TEST_F(SchedulerTest, LogprobsAndPenalties) {
  EngineCore s(*model_, options(2, 256, 16, 4));
  Tracked lp(prompt_for(5), 6);
  lp.req->opts.logprobs = 3;
  Tracked pen(prompt_for(5), 6, 0.7f, 3);
  pen.req->opts.sampling.presence_penalty = 1.5f;
  pen.req->opts.sampling.frequency_penalty = 0.5f;
  ASSERT_TRUE(s.submit(lp.req));
  ASSERT_TRUE(s.submit(pen.req));
  lp.wait();
  pen.wait();
  ASSERT_EQ(lp.events.size(), 6u);
  for (const auto& e : lp.events) {
    ASSERT_EQ(e.top.size(), 3u);
    EXPECT_EQ(e.top[0].first, e.id) << "greedy picks the most likely token";
    EXPECT_FLOAT_EQ(e.top[0].second, e.logprob);
    EXPECT_LE(e.logprob, 0.f);
    EXPECT_GE(e.top[0].second, e.top[1].second);
  }
  EXPECT_EQ(pen.tokens.size(), 6u);
  EngineCore again(*model_, options(1, 256, 16, 4));
  Tracked pen2(prompt_for(5), 6, 0.7f, 3);
  pen2.req->opts.sampling.presence_penalty = 1.5f;
  pen2.req->opts.sampling.frequency_penalty = 0.5f;
  ASSERT_TRUE(again.submit(pen2.req));
  pen2.wait();
  EXPECT_EQ(pen.tokens, pen2.tokens);
}

}  // namespace
}  // namespace brisk

namespace brisk {
namespace {

std::vector<int32_t> with_system_prompt(int k) {
  std::vector<int32_t> p;
  for (int i = 0; i < 40; ++i) p.push_back(int32_t((i * 53 + 7) % 4000 + 10));  // 2.5 blocks of 16
  for (int j = 0; j < 5 + k; ++j) p.push_back(int32_t((k * 97 + j * 11) % 4000 + 10));
  return p;
}

TEST_F(SchedulerTest, SharedPrefixSkipsItsPrefillAndGivesTheSameTokens) {
  EngineCore s(*model_, options(2, 256, 16, 8));
  Tracked first(with_system_prompt(0), 8);
  ASSERT_TRUE(s.submit(first.req));
  first.wait();
  EXPECT_EQ(first.result.cached_tokens, 0);
  Tracked second(with_system_prompt(1), 8), third(with_system_prompt(2), 8), repeat(with_system_prompt(0), 8);
  for (Tracked* r : {&second, &third, &repeat}) ASSERT_TRUE(s.submit(r->req));
  for (Tracked* r : {&second, &third, &repeat}) {
    r->wait();
    EXPECT_EQ(r->result.cached_tokens, 32) << "the two whole blocks of the common prefix";
  }
  const EngineStats st = s.stats();
  EXPECT_EQ(st.prefix_cache_queries, 4u);
  EXPECT_EQ(st.prefix_cache_hits, 3u);
  EXPECT_EQ(st.prefix_cache_hit_tokens, 96u);
  EXPECT_EQ(st.prompt_tokens, uint64_t(45 + 46 + 47 + 45 - 96)) << "only the uncached tokens are prefilled";
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_GE(st.kv_blocks_cached, 2);
  s.shutdown(true);
  // The same tokens as each prompt computed from scratch.
  EXPECT_EQ(repeat.tokens, first.tokens);
  EXPECT_EQ(second.tokens, alone(*model_, with_system_prompt(1), 8));
  EXPECT_EQ(third.tokens, alone(*model_, with_system_prompt(2), 8));
  EXPECT_NE(second.tokens, third.tokens);
}

TEST_F(SchedulerTest, PromptsPrefilledTogetherMatchTheSameRequestAlone) {
  // Up to 8 prompts share a prefill pass of at most 64 tokens (the CPU's int8 path, where a
  // token's result does not depend on the others): the same tokens as each request alone.
  std::vector<std::unique_ptr<Tracked>> runs;
  {
    EngineOptions o = options(8, 256, 64, 64);
    o.prefill_seqs = 8;
    EngineCore s(*model_, o);
    for (int i = 0; i < 16; ++i) {
      runs.push_back(std::make_unique<Tracked>(prompt_for(i), 6));
      ASSERT_TRUE(s.submit(runs.back()->req));
    }
    for (auto& r : runs) r->wait();
    EXPECT_EQ(s.stats().prompt_tokens, [&] {
      uint64_t n = 0;
      for (auto& r : runs) n += r->req->prompt.size();
      return n;
    }());
  }
  for (size_t i = 0; i < runs.size(); ++i)
    EXPECT_EQ(runs[i]->tokens, alone(*model_, prompt_for(int(i)), 6)) << "request " << i;
}

TEST_F(SchedulerTest, StepTraceAccountsForEveryTokenAndStep) {
  const std::string path = test::scratch_dir() + "/sched_trace.jsonl";
  std::vector<std::unique_ptr<Tracked>> runs;
  uint64_t prompt_tokens = 0;
  {
    EngineOptions o = options(8, 256, 64, 64);
    o.prefill_seqs = 8;
    o.trace_path = path;
    EngineCore s(*model_, o);
    for (int i = 0; i < 16; ++i) {
      runs.push_back(std::make_unique<Tracked>(prompt_for(i), 6));
      prompt_tokens += runs.back()->req->prompt.size();
      ASSERT_TRUE(s.submit(runs.back()->req));
    }
    for (auto& r : runs) r->wait();
  }
  std::ifstream in(path);
  std::string line;
  int64_t tokens = 0, firsts = 0, rows = 0, admitted = 0, lines = 0;
  double last_t = -1;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ++lines;
    EXPECT_GE(j["t"].get<double>(), last_t);
    last_t = j["t"].get<double>();
    EXPECT_LE(j["prefill_parts"].get<int64_t>(), 8);
    EXPECT_LE(j["prefill_tokens"].get<int64_t>(), 64);
    EXPECT_LE(j["decode_rows"].get<int64_t>(), 8);
    EXPECT_GE(j["step_ms"].get<double>(), j["prefill_ms"].get<double>());
    tokens += j["prefill_tokens"].get<int64_t>();
    firsts += j["first_tokens"].get<int64_t>();
    rows += j["decode_rows"].get<int64_t>();
    admitted += j["admitted"].get<int64_t>();
  }
  EXPECT_GT(lines, 0);
  EXPECT_EQ(uint64_t(tokens), prompt_tokens);
  EXPECT_EQ(firsts, 16);
  EXPECT_EQ(admitted, 16);
  EXPECT_GE(rows, 16 * 5);  // the first token of each comes from its prefill
  EXPECT_LE(rows, 16 * 6);  // at most one wasted row each (a sequence ending on a handed-out token)

  EngineOptions bad = options(2, 256, 64, 64);
  bad.trace_path = test::scratch_dir() + "/no/such/dir/trace.jsonl";
  try {
    EngineCore s(*model_, bad);
    ADD_FAILURE() << "a trace that cannot be written was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

TEST_F(SchedulerTest, PrefixCacheCanBeTurnedOff) {
  EngineOptions o = options(1, 256, 16, 8);
  o.prefix_cache = false;
  EngineCore s(*model_, o);
  for (int i = 0; i < 2; ++i) {
    Tracked r(with_system_prompt(0), 4);
    ASSERT_TRUE(s.submit(r.req));
    r.wait();
    EXPECT_EQ(r.result.cached_tokens, 0);
  }
  EXPECT_EQ(s.stats().prompt_tokens, 90u);
  EXPECT_EQ(s.stats().kv_blocks_cached, 0);
}

TEST_F(SchedulerTest, SmallPoolQueuesRequestsUntilBlocksFree) {
  // Four slots but blocks for one request at a time: the others wait in the queue and run
  // as blocks come back; one larger than the whole pool is refused at once.
  std::vector<std::unique_ptr<Tracked>> runs;
  {
    EngineOptions o = options(4, 256, 16, 8);
    o.kv_blocks = 4;
    o.kv_block_size = 16;
    EngineCore s(*model_, o);
    for (int i = 0; i < 3; ++i) {
      runs.push_back(std::make_unique<Tracked>(prompt_for(i + 40), 24));  // 5 to 19 tokens: 2 or 3 blocks
      ASSERT_TRUE(s.submit(runs.back()->req));
    }
    Tracked huge(prompt_for(1), 100);
    try {
      s.submit(huge.req);
      ADD_FAILURE() << "accepted a request larger than the pool";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("KV"), std::string::npos) << e.what();
    }
    for (auto& r : runs) r->wait();
    EXPECT_EQ(s.stats().kv_blocks_used, 0);
  }
  // The model serves one scheduler at a time: compare once the pool's scheduler is gone.
  for (auto& r : runs) {
    EXPECT_EQ(r->result.finish_reason, "length");
    EXPECT_EQ(r->tokens, alone(*model_, r->req->prompt, 24)) << "prompt of " << r->req->prompt.size();
  }
}

// A pool far smaller than the running sequences need: blocks are taken as they grow, the
// newest running sequence is preempted when none is left and recomputed later, and every
// request still gets exactly the tokens it gets alone.
TEST_F(SchedulerTest, PreemptedSequencesRecomputeAndGiveTheSameTokens) {
  constexpr int kRequests = 8;
  std::vector<std::unique_ptr<Tracked>> runs;
  EngineStats st;
  {
    EngineOptions o = options(kRequests, 256, 32, 16);
    o.kv_blocks = 12;  // 192 positions; the requests need about 8 x 60
    o.kv_block_size = 16;
    EngineCore s(*model_, o);
    for (int i = 0; i < kRequests; ++i) {
      runs.push_back(std::make_unique<Tracked>(prompt_for(i + 20), 40));
      ASSERT_TRUE(s.submit(runs.back()->req));
    }
    for (auto& r : runs) r->wait();
    st = s.stats();
    EXPECT_EQ(st.kv_blocks_used, 0);
    EXPECT_EQ(st.running, 0u);
    EXPECT_EQ(st.waiting, 0u);
  }
  EXPECT_GT(st.preemptions, 0u);
  int64_t preempted = 0;
  for (auto& r : runs) {
    EXPECT_EQ(r->result.finish_reason, "length");
    preempted += r->result.preemptions;
    EXPECT_EQ(r->tokens, alone(*model_, r->req->prompt, 40)) << "prompt of " << r->req->prompt.size();
  }
  EXPECT_EQ(uint64_t(preempted), st.preemptions);
}

// Sequences that run to the end of their context (a whole number of blocks) while decode
// steps overlap: the token a launched step holds is the last one, so it takes no block past
// the row's reach; each ends with "length" at the context and matches the same run alone.
TEST_F(SchedulerTest, SequencesRunToTheEndOfTheirContext) {
  constexpr int kRequests = 4;
  constexpr int64_t kContext = 64;  // four blocks of 16
  std::vector<std::unique_ptr<Tracked>> runs;
  auto run_all = [&](int parallel) {
    runs.clear();
    EngineOptions o = options(parallel, kContext, 16, 8);
    o.kv_block_size = 16;
    EngineCore s(*model_, o);
    for (int i = 0; i < kRequests; ++i) {
      runs.push_back(std::make_unique<Tracked>(prompt_for(i + 3), 1000));
      EXPECT_TRUE(s.submit(runs.back()->req));
    }
    for (auto& r : runs) r->wait();
    EXPECT_EQ(s.stats().kv_blocks_used, 0);
  };
  run_all(1);
  std::vector<std::vector<int32_t>> alone_tokens;
  for (auto& r : runs) alone_tokens.push_back(r->tokens);
  run_all(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    const Tracked& r = *runs[size_t(i)];
    EXPECT_EQ(r.result.error, "") << "request " << i;
    EXPECT_EQ(r.result.finish_reason, "length") << "request " << i;
    EXPECT_EQ(int64_t(r.req->prompt.size() + r.tokens.size()), kContext + 1) << "request " << i;
    EXPECT_EQ(r.tokens, alone_tokens[size_t(i)]) << "request " << i;
  }
}

// logit_bias: a banned token never appears; one favoured strongly is drawn every time.
TEST_F(SchedulerTest, LogitBiasBansAndFavoursTokens) {
  const std::vector<int32_t> greedy = alone(*model_, prompt_for(9), 8);
  EngineCore s(*model_, options(2, 256, 16, 4));
  Tracked ban(prompt_for(9), 8), favour(prompt_for(9), 8, 0.9f, 5);
  ban.req->opts.sampling.logit_bias = {{greedy[0], -100.f}, {greedy[1], -100.f}};
  favour.req->opts.sampling.logit_bias = {{1234, 100.f}};
  ASSERT_TRUE(s.submit(ban.req));
  ASSERT_TRUE(s.submit(favour.req));
  ban.wait();
  favour.wait();
  ASSERT_EQ(ban.tokens.size(), 8u);
  for (int32_t id : ban.tokens) EXPECT_TRUE(id != greedy[0] && id != greedy[1]) << "banned token " << id;
  EXPECT_EQ(favour.tokens, std::vector<int32_t>(8, 1234));
  Tracked bad(prompt_for(9), 8);
  bad.req->opts.sampling.logit_bias = {{int32_t(model_->hparams().vocab), 1.f}};
  EXPECT_THROW(s.submit(bad.req), Error);
}

}  // namespace
}  // namespace brisk
