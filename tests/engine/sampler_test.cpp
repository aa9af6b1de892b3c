// The sampler, tested exactly where the answer is exact (greedy, filters that must
// exclude tokens, penalties that must move the argmax, seeds) and statistically where
// it is a distribution (chi-square against softmax, fixed seeds so nothing flakes).
#include "engine/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <vector>

#include "base/error.hpp"

namespace brisk {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Deterministic pseudo-random logits (no std distributions: they differ across libraries).
std::vector<float> make_logits(size_t n, uint64_t seed, float scale = 4.0f) {
  std::vector<float> v(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (float& f : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f = scale * (float((x >> 40) & 0xffffff) / float(1 << 24) - 0.5f);
  }
  return v;
}

std::vector<float> log_of(std::vector<double> probs) {
  std::vector<float> v;
  for (double p : probs) v.push_back(float(std::log(p)));
  return v;
}

SamplingParams plain(float temperature = 1.0f, uint64_t seed = 42) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<int> histogram(Sampler& s, const std::vector<float>& logits, int draws) {
  std::vector<int> h(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++h[size_t(s.sample(logits, {}))];
  return h;
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  const double m = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p;
  for (float l : logits) p.push_back(std::exp((l - m) / temperature));
  const double z = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= z;
  return p;
}

double chi_square(const std::vector<int>& h, const std::vector<double>& p, int draws) {
  double chi = 0.0;
  for (size_t i = 0; i < h.size(); ++i) {
    const double e = p[i] * draws;
    if (e == 0.0) {
      EXPECT_EQ(h[i], 0) << "token " << i << " has zero probability but was drawn";
      continue;
    }
    chi += (h[i] - e) * (h[i] - e) / e;
  }
  return chi;
}

void expect_invalid(const SamplingParams& p, const char* field) {
  try {
    Sampler s(p, 8);
    ADD_FAILURE() << "no error for " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << field;
    EXPECT_EQ(e.where(), field);
    EXPECT_NE(e.message().find(field), std::string::npos) << e.message();
  }
}

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p, 6);
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -2.0f, 2.9f, 0.0f, 1.0f}, {}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 5.0f, 2.0f, 5.0f, 5.0f, 0.0f}, {}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{kNegInf, kNegInf, -7.0f, kNegInf, -8.0f, kNegInf}, {}), 2);
}

TEST(Sampler, GreedyMatchesArgmaxOnRandomRows) {
  Sampler s(plain(0.0f), 1000);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> l = make_logits(1000, seed);
    EXPECT_EQ(s.sample(l, {}), int32_t(std::max_element(l.begin(), l.end()) - l.begin()));
  }
}

TEST(Sampler, TinyTemperatureIsGreedy) {
  const std::vector<float> l = {1.0f, 2.0f, 1.9f, -1.0f, 1.95f};
  Sampler s(plain(1e-4f), 5);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(s.sample(l, {}), 1);
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplingParams p = plain(1.5f);
  p.top_k = 1;
  Sampler s(p, 5000);
  Sampler g(plain(0.0f), 5000);
  for (uint64_t seed = 0; seed < 30; ++seed) {
    std::vector<float> l = make_logits(5000, seed);
    EXPECT_EQ(s.sample(l, {}), g.sample(l, {}));
  }
}

TEST(Sampler, TopKKeepsExactlyTheKBest) {
  SamplingParams p = plain(1.0f, 7);
  p.top_k = 3;
  const std::vector<float> l = {0.0f, 1.0f, 0.5f, 0.9f, 0.95f, 0.2f};  // best: 1, 4, 3
  Sampler s(p, 6);
  std::vector<int> h = histogram(s, l, 6000);
  EXPECT_EQ(h[0] + h[2] + h[5], 0);
  EXPECT_GT(h[1], 0);
  EXPECT_GT(h[3], 0);
  EXPECT_GT(h[4], 0);
  // Renormalized over the survivors: chi-square with 2 degrees of freedom.
  std::vector<double> q = softmax(l, 1.0);
  const double z = q[1] + q[3] + q[4];
  for (size_t i = 0; i < q.size(); ++i) q[i] = (i == 1 || i == 3 || i == 4) ? q[i] / z : 0.0;
  EXPECT_LT(chi_square(h, q, 6000), 13.8);  // p = 0.001
}

TEST(Sampler, TinyTopPKeepsOnlyTheTopToken) {
  SamplingParams p = plain(2.0f);
  p.top_p = 1e-6f;
  Sampler s(p, 4000);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    std::vector<float> l = make_logits(4000, seed, 1.0f);
    const int32_t best = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    for (int i = 0; i < 20; ++i) ASSERT_EQ(s.sample(l, {}), best);
  }
}

TEST(Sampler, TopPKeepsTheTokenThatCrossesTheThreshold) {
  const std::vector<float> l = log_of({0.2, 0.5, 0.3});
  SamplingParams p = plain(1.0f, 3);
  p.top_p = 0.45f;  // 0.5 alone reaches it
  Sampler only_top(p, 3);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(only_top.sample(l, {}), 1);
  p.top_p = 0.75f;  // 0.5 + 0.3
  Sampler two(p, 3);
  std::vector<int> h = histogram(two, l, 4000);
  EXPECT_EQ(h[0], 0);
  EXPECT_GT(h[1], 1000);
  EXPECT_GT(h[2], 1000);
}

TEST(Sampler, TopPOverAFlatShuffledVocabSortsOnlyWhatItNeeds) {
  // Nearly flat: top_p = 0.5 needs thousands of tokens, so the chunked sort must grow.
  const int n = 20000;
  std::vector<int32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  uint64_t x = 99;
  for (int i = n - 1; i > 0; --i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(perm[i], perm[(x >> 33) % uint64_t(i + 1)]);
  }
  std::vector<float> l(n);
  for (int r = 0; r < n; ++r) l[perm[r]] = -float(r) * 1e-4f;  // rank r has the r-th largest logit
  std::vector<double> q = softmax(l, 1.0);
  double cum = 0.0;
  int cutoff = 0;  // last rank kept
  while ((cum += q[perm[cutoff]]) < 0.5) ++cutoff;
  std::vector<int> rank(n);
  for (int r = 0; r < n; ++r) rank[perm[r]] = r;

  SamplingParams p = plain(1.0f, 11);
  p.top_p = 0.5f;
  Sampler s(p, n);
  int max_rank = 0;
  for (int i = 0; i < 3000; ++i) {
    const int r = rank[s.sample(l, {})];
    ASSERT_LE(r, cutoff);
    max_rank = std::max(max_rank, r);
  }
  EXPECT_GT(cutoff, 5000);
  EXPECT_GT(max_rank, cutoff * 9 / 10);
}

TEST(Sampler, TopPAfterTopKUsesTheRenormalizedSurvivors) {
  // top_k 2 leaves {0.5, 0.3} -> {0.625, 0.375}; top_p 0.6 then keeps only the first.
  const std::vector<float> l = log_of({0.3, 0.5, 0.2});
  SamplingParams p = plain(1.0f, 13);
  p.top_k = 2;
  p.top_p = 0.6f;
  Sampler s(p, 3);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(s.sample(l, {}), 1);
  p.top_p = 0.7f;
  Sampler both(p, 3);
  std::vector<int> h = histogram(both, l, 2000);
  EXPECT_EQ(h[2], 0);
  EXPECT_GT(h[0], 400);
}

TEST(Sampler, TopPOverEqualLogitsBreaksTiesByLowerId) {
  const int n = 1000;
  const std::vector<float> l(n, 0.25f);
  SamplingParams p = plain(1.0f, 17);
  p.top_p = 0.5f;  // exactly 500 tokens' worth
  Sampler s(p, n);
  std::vector<int> h = histogram(s, l, 5000);
  for (int i = 500; i < n; ++i) ASSERT_EQ(h[size_t(i)], 0) << i;
  EXPECT_GT(*std::max_element(h.begin() + 450, h.begin() + 500), 0);
}

TEST(Sampler, MinPDropsTokensBelowTheFraction) {
  const std::vector<float> l = log_of({0.4, 0.3, 0.2, 0.1});  // min_p 0.3 => p >= 0.12
  for (int top_k : {0, 3, 4}) {  // unsorted and sorted paths
    SamplingParams p = plain(1.0f, 5);
    p.min_p = 0.3f;
    p.top_k = top_k;
    Sampler s(p, 4);
    std::vector<int> h = histogram(s, l, 4000);
    EXPECT_EQ(h[3], 0) << top_k;
    EXPECT_GT(h[0], 0);
    EXPECT_GT(h[1], 0);
    EXPECT_GT(h[2], 0);
  }
}

TEST(Sampler, FiltersApplyBeforeTemperature) {
  // At temperature 1, min_p 0.3 removes token 2 (0.1 < 0.3 * 0.6). A high temperature
  // flattens the draw but must not bring it back, as in llama.cpp's chain.
  const std::vector<float> l = log_of({0.6, 0.3, 0.1});
  SamplingParams p = plain(50.0f, 9);
  p.min_p = 0.3f;
  Sampler s(p, 3);
  std::vector<int> h = histogram(s, l, 4000);
  EXPECT_EQ(h[2], 0);
  EXPECT_GT(h[1], 1500);  // nearly even between 0 and 1
}

TEST(Sampler, MaskedTokensAreNeverDrawn) {
  std::vector<float> l = make_logits(64, 1, 0.5f);
  for (int i = 0; i < 64; i += 2) l[i] = kNegInf;
  Sampler s(plain(3.0f), 64);
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(s.sample(l, {}) % 2, 1);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegative) {
  SamplingParams p = plain(0.0f);
  p.repeat_penalty = 1.5f;
  Sampler s(p, 4);
  const std::vector<int32_t> hist0 = {0};
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f, 0.0f, -5.0f}, {}), 0);
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f, 0.0f, -5.0f}, hist0), 1);      // 2 / 1.5 < 1.9
  EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -1.2f, -9.0f, -9.0f}, hist0), 1);   // -1 * 1.5 < -1.2
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.2f, 0.0f, -5.0f}, hist0), 0);      // 1.33 > 1.2
}

TEST(Sampler, RepeatWindowCountsOnlyTheLastTokens) {
  const std::vector<float> l = {2.0f, 2.1f};
  const std::vector<int32_t> hist = {0, 1};
  auto argmax_with = [&](int last_n) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = last_n;
    return Sampler(p, 2).sample(l, hist);
  };
  EXPECT_EQ(argmax_with(1), 0);   // only 1 penalized: 1.4 < 2.0
  EXPECT_EQ(argmax_with(-1), 1);  // both: 1.33 < 1.4
  EXPECT_EQ(argmax_with(64), 1);
  EXPECT_EQ(argmax_with(0), 1);   // off
}

TEST(Sampler, FrequencyAndPresencePenalties) {
  const std::vector<float> l = {3.0f, 2.0f};
  const std::vector<int32_t> three = {0, 0, 0}, two = {0, 0};
  SamplingParams p = plain(0.0f);
  p.frequency_penalty = 0.4f;
  EXPECT_EQ(Sampler(p, 2).sample(l, three), 1);  // 3 - 1.2 < 2
  EXPECT_EQ(Sampler(p, 2).sample(l, two), 0);    // 3 - 0.8 > 2
  p = plain(0.0f);
  p.presence_penalty = 1.5f;
  EXPECT_EQ(Sampler(p, 2).sample(l, three), 1);  // count does not matter
  p.presence_penalty = 0.5f;
  EXPECT_EQ(Sampler(p, 2).sample(l, three), 0);
  // Negative penalties encourage repetition.
  p = plain(0.0f);
  p.frequency_penalty = -1.0f;
  EXPECT_EQ(Sampler(p, 2).sample(std::vector<float>{1.0f, 2.0f}, two), 0);
}

TEST(Sampler, PenaltiesApplyOnTheStochasticPathAndDoNotLeak) {
  SamplingParams p = plain(1.0f);
  p.top_k = 1;
  p.repeat_penalty = 2.0f;
  Sampler s(p, 3);
  const std::vector<float> l = {3.0f, 2.0f, 1.0f};
  const std::vector<int32_t> hist = {0};
  EXPECT_EQ(s.sample(l, hist), 1);
  EXPECT_EQ(s.sample(l, {}), 0);  // no state carried from the previous call
  EXPECT_EQ(s.sample(l, hist), 1);
}

TEST(Sampler, HistoryOutsideTheVocabThrows) {
  SamplingParams p = plain(0.0f);
  p.repeat_penalty = 2.0f;
  Sampler s(p, 4);
  const std::vector<int32_t> bad = {1, 4};
  EXPECT_THROW(s.sample(std::vector<float>{0, 1, 2, 3}, bad), Error);
  const std::vector<int32_t> good = {3};
  EXPECT_EQ(s.sample(std::vector<float>{0, 1, 2, 3}, good), 2);  // 3 / 2 < 2
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferent) {
  const std::vector<float> l = make_logits(1000, 3, 2.0f);
  SamplingParams p;  // defaults: top_k 40, top_p 0.95, min_p 0.05, temperature 0.8
  p.seed = 1234;
  Sampler a(p, 1000), b(p, 1000);
  p.seed = 1235;
  Sampler c(p, 1000);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.sample(l, {}));
    tb.push_back(b.sample(l, {}));
    tc.push_back(c.sample(l, {}));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  a.reset(1234);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(a.sample(l, {}), ta[size_t(i)]);
}

TEST(Sampler, KnownSequenceForAFixedSeed) {
  // Pins the PRNG and the draw: a change here changes every seeded output users saw.
  const std::vector<float> l = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  Sampler s(plain(1.0f, 2024), 8);
  std::vector<int32_t> got;
  for (int i = 0; i < 12; ++i) got.push_back(s.sample(l, {}));
  Sampler again(plain(1.0f, 2024), 8);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(again.sample(l, {}), got[size_t(i)]);
  std::string seq;
  for (int32_t t : got) seq += char('0' + t);
  std::printf("seed 2024 over 8 equal logits: %s\n", seq.c_str());
  EXPECT_EQ(seq, "060161324057");
}

TEST(Sampler, EmpiricalDistributionMatchesSoftmax) {
  const int draws = 20000;
  const std::vector<float> l = make_logits(16, 5, 3.0f);
  for (float t : {1.0f, 0.5f, 2.0f}) {
    Sampler s(plain(t, 777), 16);
    std::vector<int> h = histogram(s, l, draws);
    const double chi = chi_square(h, softmax(l, t), draws);
    std::printf("temperature %.1f: chi-square %.2f (15 dof)\n", t, chi);
    EXPECT_LT(chi, 37.7) << "temperature " << t;  // p = 0.001 for 15 dof
  }
}

TEST(Sampler, RejectsBadParams) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SamplingParams p;
  p.temperature = -0.1f;
  expect_invalid(p, "temperature");
  p.temperature = nan;
  expect_invalid(p, "temperature");
  p = {};
  for (float v : {0.0f, -0.5f, 1.01f, nan}) {
    p.top_p = v;
    expect_invalid(p, "top_p");
  }
  p = {};
  for (float v : {1.5f, nan}) {
    p.min_p = v;
    expect_invalid(p, "min_p");
  }
  p = {};
  for (float v : {0.0f, -1.0f, nan}) {
    p.repeat_penalty = v;
    expect_invalid(p, "repeat_penalty");
  }
  p = {};
  p.repeat_last_n = -2;
  expect_invalid(p, "repeat_last_n");
  p = {};
  p.presence_penalty = nan;
  expect_invalid(p, "presence_penalty");
  p = {};
  p.frequency_penalty = std::numeric_limits<float>::infinity();
  expect_invalid(p, "frequency_penalty");
  EXPECT_THROW(Sampler(SamplingParams{}, 0), Error);
  // Allowed edges.
  p = {};
  p.top_p = 1.0f;
  p.min_p = -1.0f;
  p.top_k = -5;
  EXPECT_NO_THROW(Sampler(p, 8));
}

TEST(Sampler, RejectsBadLogits) {
  for (float t : {0.0f, 1.0f}) {
    Sampler s(plain(t), 4);
    EXPECT_THROW(s.sample(std::vector<float>{1, 2, 3}, {}), Error);
    EXPECT_THROW(s.sample(std::vector<float>{1, std::nanf(""), 3, 4}, {}), Error);
    EXPECT_THROW(s.sample(std::vector<float>(4, kNegInf), {}), Error);
  }
}

TEST(Sampler, UnseededSamplersWork) {
  SamplingParams p;
  ASSERT_FALSE(p.seed.has_value());
  Sampler s(p, 100);
  const std::vector<float> l = make_logits(100, 8);
  const int32_t t = s.sample(l, {});
  EXPECT_GE(t, 0);
  EXPECT_LT(t, 100);
}

TEST(Sampler, FullVocabSpeedSanity) {
  const int32_t n = 262144;
  const std::vector<float> l = make_logits(size_t(n), 21, 12.0f);
  std::vector<int32_t> hist(64);
  for (size_t i = 0; i < hist.size(); ++i) hist[i] = int32_t(i * 4099 % size_t(n));
  struct Case {
    const char* name;
    SamplingParams p;
  };
  SamplingParams defaults;
  defaults.seed = 1;
  defaults.repeat_penalty = 1.1f;
  SamplingParams top_p_only = plain(0.8f, 1);
  top_p_only.top_p = 0.95f;
  SamplingParams min_p_only = plain(0.8f, 1);
  min_p_only.min_p = 0.05f;
  const Case cases[] = {{"defaults+repeat", defaults}, {"top_p only", top_p_only},
                        {"min_p only", min_p_only},    {"no filters", plain(1.0f, 1)},
                        {"greedy", plain(0.0f, 1)}};
  for (const Case& c : cases) {
    Sampler s(c.p, n);
    const int iters = 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      const int32_t t = s.sample(l, hist);
      ASSERT_GE(t, 0);
      ASSERT_LT(t, n);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("vocab %d, %-16s %.3f ms/token\n", n, c.name, ms / iters);
  }
}

TEST(TopLogprobs, MatchesLogSoftmaxSortedWithTiesByLowerId) {
  const std::vector<float> l = {1.0f, 3.0f, kNegInf, 3.0f, -2.0f, 0.5f};
  const std::vector<double> q = softmax(l, 1.0);
  auto top = top_logprobs(l, 4);
  ASSERT_EQ(top.size(), 4u);
  const int32_t order[] = {1, 3, 0, 5};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(top[i].first, order[i]);
    EXPECT_NEAR(top[i].second, std::log(q[size_t(order[i])]), 1e-5);
  }
  EXPECT_TRUE(top_logprobs(l, 0).empty());
  EXPECT_TRUE(top_logprobs(l, -3).empty());
  auto all = top_logprobs(l, 100);
  ASSERT_EQ(all.size(), l.size());
  EXPECT_EQ(all.back().first, 2);
  EXPECT_EQ(all.back().second, kNegInf);
  double mass = 0.0;
  for (auto& [id, lp] : all) mass += std::exp(double(lp));
  EXPECT_NEAR(mass, 1.0, 1e-5);
}

TEST(TopLogprobs, LargeVocab) {
  const std::vector<float> l = make_logits(262144, 4, 10.0f);
  auto top = top_logprobs(l, 5);
  ASSERT_EQ(top.size(), 5u);
  EXPECT_EQ(top[0].first, int32_t(std::max_element(l.begin(), l.end()) - l.begin()));
  for (size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].second, top[i].second);
  EXPECT_LT(top[0].second, 0.0f);
}

}  // namespace
}  // namespace brisk
