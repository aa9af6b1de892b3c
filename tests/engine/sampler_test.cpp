// The one sampling definition: engine/sampler.hpp (validation, the per-step RowSampling,
// the LogitsProcessor's penalties and logit_bias as LogitEdits, logprobs) and the backend's
// counter-based row sampler (backend/row_sampling.hpp). Tested exactly where the answer is
// exact (greedy, filters that must exclude tokens, edits, seeds) and statistically where it
// is a distribution (chi-square against a softmax computed here, over fixed seeds and steps,
// so nothing flakes).
#include "engine/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "backend/row_sampling.hpp"
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

int32_t argmax(const std::vector<float>& l) {  // the first maximum: lowest id on ties
  return int32_t(std::max_element(l.begin(), l.end()) - l.begin());
}

// No filters, the given temperature.
SamplingParams plain(float temperature = 1.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

int32_t draw(const std::vector<float>& l, const SamplingParams& p, uint64_t seed, uint64_t step) {
  return sample_row(l.data(), int64_t(l.size()), row_sampling(p, seed, step));
}

int32_t greedy(const std::vector<float>& l) { return draw(l, plain(0.0f), 0, 0); }

// Tokens drawn at steps 0 .. draws-1 of one seed.
std::vector<int> histogram(const std::vector<float>& l, const SamplingParams& p, uint64_t seed, int draws) {
  std::vector<int> h(l.size(), 0);
  for (int i = 0; i < draws; ++i) ++h[size_t(draw(l, p, seed, uint64_t(i)))];
  return h;
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  double m = -std::numeric_limits<double>::infinity();
  for (float l : logits) m = std::max(m, double(l));
  std::vector<double> p;
  for (float l : logits) p.push_back(std::exp((double(l) - m) / temperature));
  const double z = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= z;
  return p;
}

// softmax restricted to `keep` (renormalized), zero elsewhere.
std::vector<double> softmax_over(const std::vector<float>& logits, double temperature, const std::vector<int>& keep) {
  std::vector<double> q = softmax(logits, temperature);
  double z = 0.0;
  for (int i : keep) z += q[size_t(i)];
  std::vector<double> out(q.size(), 0.0);
  for (int i : keep) out[size_t(i)] = q[size_t(i)] / z;
  return out;
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

// A processor's edits for row `row`, by id; fails the test if an id repeats or the row is wrong.
std::map<int32_t, LogitEdit> edits_by_id(const LogitsProcessor& lp, int32_t row = 0) {
  std::vector<LogitEdit> out;
  lp.edits(row, out);
  std::map<int32_t, LogitEdit> m;
  for (const LogitEdit& e : out) {
    EXPECT_EQ(e.row, row);
    EXPECT_TRUE(m.emplace(e.id, e).second) << "two edits for token " << e.id;
  }
  return m;
}

// The row after the processor's edits, as a backend applies them.
std::vector<float> processed(const LogitsProcessor& lp, std::vector<float> l) {
  std::vector<LogitEdit> out;
  lp.edits(0, out);
  for (const LogitEdit& e : out) apply_logit_edit(l.data(), e);
  return l;
}

std::vector<float> processed(const SamplingParams& p, const std::vector<int32_t>& history, std::vector<float> l) {
  return processed(LogitsProcessor(p, history), std::move(l));
}

// llama.cpp's repetition penalty on one logit.
float repeat_penalized(float l, float penalty) { return l > 0.f ? l / penalty : l * penalty; }

void expect_invalid(const SamplingParams& p, const char* field, int64_t vocab = 8) {
  try {
    validate(p, vocab);
    ADD_FAILURE() << "no error for " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << field;
    EXPECT_EQ(e.where(), field);
    EXPECT_NE(e.message().find(field), std::string::npos) << e.message();
  }
}

// ---------------------------------------------------------------------------------------
// RowSampling from SamplingParams.

TEST(RowSampling, CarriesTheFiltersSeedAndStep) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 12;
  p.top_p = 0.9f;
  p.min_p = 0.02f;
  p.seed = 5;  // the seed row_sampling is given wins: the engine resolves an unset one
  const RowSampling r = row_sampling(p, 99, 17);
  EXPECT_EQ(r.temperature, 0.7f);
  EXPECT_EQ(r.top_k, 12);
  EXPECT_EQ(r.top_p, 0.9f);
  EXPECT_EQ(r.min_p, 0.02f);
  EXPECT_EQ(r.seed, 99u);
  EXPECT_EQ(r.step, 17u);
}

// ---------------------------------------------------------------------------------------
// The row sampler.

TEST(SampleRow, GreedyIsArgmaxLowestIdOnTies) {
  EXPECT_EQ(greedy({0.1f, 3.0f, -2.0f, 2.9f, 0.0f, 1.0f}), 1);
  EXPECT_EQ(greedy({1.0f, 5.0f, 2.0f, 5.0f, 5.0f, 0.0f}), 1);
  EXPECT_EQ(greedy({kNegInf, kNegInf, -7.0f, kNegInf, -8.0f, kNegInf}), 2);
  // Greedy ignores the filters, the seed and the step.
  SamplingParams p = plain(0.0f);
  p.top_k = 3;
  p.top_p = 0.5f;
  p.min_p = 0.5f;
  const std::vector<float> l = {1.0f, 5.0f, 2.0f, 5.0f};
  for (uint64_t step = 0; step < 50; ++step) ASSERT_EQ(draw(l, p, 1000 + step, step), 1);
}

TEST(SampleRow, GreedyMatchesArgmaxOnRandomRows) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> l = make_logits(1000, seed);
    EXPECT_EQ(greedy(l), argmax(l));
  }
}

TEST(SampleRow, TinyTemperatureIsGreedy) {
  const std::vector<float> l = {1.0f, 2.0f, 1.9f, -1.0f, 1.95f};
  for (uint64_t step = 0; step < 2000; ++step) ASSERT_EQ(draw(l, plain(1e-4f), 42, step), 1);
}

TEST(SampleRow, TopKOneIsGreedy) {
  SamplingParams p = plain(1.5f);
  p.top_k = 1;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    std::vector<float> l = make_logits(5000, seed);
    for (uint64_t step = 0; step < 5; ++step) EXPECT_EQ(draw(l, p, seed, step), argmax(l));
  }
}

TEST(SampleRow, TopKKeepsExactlyTheKBest) {
  SamplingParams p = plain(1.0f);
  p.top_k = 3;
  const std::vector<float> l = {0.0f, 1.0f, 0.5f, 0.9f, 0.95f, 0.2f};  // best: 1, 4, 3
  const int draws = 6000;
  std::vector<int> h = histogram(l, p, 7, draws);
  EXPECT_EQ(h[0] + h[2] + h[5], 0);
  EXPECT_GT(h[1], 0);
  EXPECT_GT(h[3], 0);
  EXPECT_GT(h[4], 0);
  // Renormalized over the survivors: chi-square with 2 degrees of freedom.
  EXPECT_LT(chi_square(h, softmax_over(l, 1.0, {1, 3, 4}), draws), 13.8);  // p = 0.001
}

TEST(SampleRow, TopKKeepsEveryTieAtTheCut) {
  // The 2nd largest logit is 2.0, shared by tokens 2, 3 and 5: all of them survive top_k 2.
  SamplingParams p = plain(1.0f);
  p.top_k = 2;
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, 2.0f, 0.0f, 2.0f};
  const int draws = 8000;
  std::vector<int> h = histogram(l, p, 21, draws);
  EXPECT_EQ(h[0] + h[4], 0);
  for (int i : {1, 2, 3, 5}) EXPECT_GT(h[size_t(i)], 0) << i;
  EXPECT_LT(chi_square(h, softmax_over(l, 1.0, {1, 2, 3, 5}), draws), 16.3);  // 3 dof, p = 0.001
}

TEST(SampleRow, TinyTopPKeepsOnlyTheTopToken) {
  SamplingParams p = plain(2.0f);
  p.top_p = 1e-6f;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    std::vector<float> l = make_logits(4000, seed, 1.0f);
    const int32_t best = argmax(l);
    for (uint64_t step = 0; step < 20; ++step) ASSERT_EQ(draw(l, p, seed, step), best);
  }
}

TEST(SampleRow, TopPKeepsTheTokenThatCrossesTheThreshold) {
  const std::vector<float> l = log_of({0.2, 0.5, 0.3});
  SamplingParams p = plain(1.0f);
  p.top_p = 0.45f;  // 0.5 alone reaches it
  for (uint64_t step = 0; step < 500; ++step) ASSERT_EQ(draw(l, p, 3, step), 1);
  p.top_p = 0.75f;  // 0.5 + 0.3: the 0.3 crosses the threshold and is kept
  const int draws = 4000;
  std::vector<int> h = histogram(l, p, 3, draws);
  EXPECT_EQ(h[0], 0);
  EXPECT_GT(h[1], 1000);
  EXPECT_GT(h[2], 1000);
  EXPECT_LT(chi_square(h, softmax_over(l, 1.0, {1, 2}), draws), 10.8);  // 1 dof, p = 0.001
}

TEST(SampleRow, TopPOverAFlatShuffledVocab) {
  // Nearly flat: top_p = 0.5 needs thousands of tokens.
  const int n = 20000;
  std::vector<int32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  uint64_t x = 99;
  for (int i = n - 1; i > 0; --i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(perm[size_t(i)], perm[size_t((x >> 33) % uint64_t(i + 1))]);
  }
  std::vector<float> l(n);
  for (int r = 0; r < n; ++r) l[size_t(perm[size_t(r)])] = -float(r) * 1e-4f;  // rank r: the r-th largest
  std::vector<double> q = softmax(l, 1.0);
  double cum = 0.0;
  int cutoff = 0;  // the last rank kept: the one whose mass crosses 0.5
  while ((cum += q[size_t(perm[size_t(cutoff)])]) < 0.5) ++cutoff;
  // The crossing is far from ambiguous (rounding in the fixed-point sums is ~1e-8).
  ASSERT_GT(cum - 0.5, 1e-6);
  ASSERT_GT(0.5 - (cum - q[size_t(perm[size_t(cutoff)])]), 1e-6);
  std::vector<int> rank(n);
  for (int r = 0; r < n; ++r) rank[size_t(perm[size_t(r)])] = r;

  SamplingParams p = plain(1.0f);
  p.top_p = 0.5f;
  int max_rank = 0;
  for (uint64_t step = 0; step < 3000; ++step) {
    const int r = rank[size_t(draw(l, p, 11, step))];
    ASSERT_LE(r, cutoff);
    max_rank = std::max(max_rank, r);
  }
  EXPECT_GT(cutoff, 5000);
  EXPECT_GT(max_rank, cutoff * 9 / 10);
}

TEST(SampleRow, TopPAfterTopKUsesTheRenormalizedSurvivors) {
  // top_k 2 leaves {0.5, 0.3} -> {0.625, 0.375}; top_p 0.6 then keeps only the first.
  const std::vector<float> l = log_of({0.3, 0.5, 0.2});
  SamplingParams p = plain(1.0f);
  p.top_k = 2;
  p.top_p = 0.6f;
  for (uint64_t step = 0; step < 500; ++step) ASSERT_EQ(draw(l, p, 13, step), 1);
  p.top_p = 0.7f;  // 0.625 < 0.7: both survivors
  std::vector<int> h = histogram(l, p, 13, 2000);
  EXPECT_EQ(h[2], 0);
  EXPECT_GT(h[0], 400);
  EXPECT_GT(h[1], 800);
}

TEST(SampleRow, TopPKeepsAllOfATiedValue) {
  // 1000 equal logits: the token that crosses 0.5 shares its value with every other one,
  // so all of them are kept.
  const int n = 1000;
  const std::vector<float> l(n, 0.25f);
  SamplingParams p = plain(1.0f);
  p.top_p = 0.5f;
  std::vector<int> h = histogram(l, p, 17, 5000);
  EXPECT_GT(std::accumulate(h.begin() + 500, h.end(), 0), 2000);
  // {0.4, 0.17 x3, 0.09}: 0.4 < 0.5, so the 0.17s are reached; all three stay, 0.09 goes.
  const std::vector<float> m = log_of({0.4, 0.17, 0.17, 0.17, 0.09});
  const int draws = 6000;
  std::vector<int> hm = histogram(m, p, 19, draws);
  EXPECT_EQ(hm[4], 0);
  for (int i : {0, 1, 2, 3}) EXPECT_GT(hm[size_t(i)], 0) << i;
  EXPECT_LT(chi_square(hm, softmax_over(m, 1.0, {0, 1, 2, 3}), draws), 16.3);  // 3 dof, p = 0.001
}

TEST(SampleRow, MinPDropsTokensBelowTheFraction) {
  const std::vector<float> l = log_of({0.4, 0.3, 0.2, 0.1});  // min_p 0.3 => p >= 0.12
  for (int top_k : {0, 3, 4}) {
    for (float top_p : {1.0f, 0.99f}) {  // with and without the sorted top_p path
      SamplingParams p = plain(1.0f);
      p.min_p = 0.3f;
      p.top_k = top_k;
      p.top_p = top_p;
      const int draws = 4000;
      std::vector<int> h = histogram(l, p, 5, draws);
      EXPECT_EQ(h[3], 0) << top_k << " " << top_p;
      EXPECT_GT(h[0], 0);
      EXPECT_GT(h[1], 0);
      EXPECT_GT(h[2], 0);
      EXPECT_LT(chi_square(h, softmax_over(l, 1.0, {0, 1, 2}), draws), 13.8);  // 2 dof, p = 0.001
    }
  }
}

TEST(SampleRow, FiltersApplyBeforeTemperature) {
  // At temperature 1, min_p 0.3 removes token 2 (0.1 < 0.3 * 0.6). A high temperature
  // flattens the draw but must not bring it back, as in llama.cpp's chain.
  const std::vector<float> l = log_of({0.6, 0.3, 0.1});
  SamplingParams p = plain(50.0f);
  p.min_p = 0.3f;
  std::vector<int> h = histogram(l, p, 9, 4000);
  EXPECT_EQ(h[2], 0);
  EXPECT_GT(h[1], 1500);  // nearly even between 0 and 1
  // top_p 0.55 at temperature 1 keeps only the 0.6; at temperature 50 it would keep more.
  p = plain(50.0f);
  p.top_p = 0.55f;
  for (uint64_t step = 0; step < 500; ++step) ASSERT_EQ(draw(l, p, 9, step), 0);
  // top_k is by logit, so temperature cannot change it either.
  p = plain(50.0f);
  p.top_k = 2;
  h = histogram(l, p, 9, 4000);
  EXPECT_EQ(h[2], 0);
  EXPECT_GT(h[1], 1500);
}

TEST(SampleRow, MaskedTokensAreNeverDrawn) {
  std::vector<float> l = make_logits(64, 1, 0.5f);
  for (size_t i = 0; i < 64; i += 2) l[i] = kNegInf;
  SamplingParams filtered = plain(3.0f);
  filtered.top_k = 50;  // more than the 32 finite ones
  filtered.top_p = 0.999f;
  filtered.min_p = 1e-6f;
  for (const SamplingParams& p : {plain(3.0f), filtered})
    for (uint64_t step = 0; step < 3000; ++step) ASSERT_EQ(draw(l, p, 42, step) % 2, 1);
  // One finite token: always that one.
  std::vector<float> one(100, kNegInf);
  one[57] = -3.0f;
  for (const SamplingParams& p : {plain(1.0f), filtered})
    for (uint64_t step = 0; step < 200; ++step) ASSERT_EQ(draw(one, p, 1, step), 57);
}

TEST(SampleRow, GeneratorIsSplitmix64OfSeedAndStep) {
  // Reference splitmix64 (Vigna): the state advances by the golden gamma before each output.
  // Step k of a seed is output k + 1 of the stream that starts at the seed, as its top 53 bits.
  for (uint64_t seed : {0ull, 1ull, 2024ull, 0xdeadbeefcafef00dull}) {
    uint64_t state = seed;
    for (uint64_t step = 0; step < 100; ++step) {
      state += 0x9e3779b97f4a7c15ull;
      uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      const double u = sample_uniform(seed, step);
      ASSERT_EQ(u, std::ldexp(double(z >> 11), -53)) << seed << " " << step;
      ASSERT_GE(u, 0.0);
      ASSERT_LT(u, 1.0);
    }
  }
}

TEST(SampleRow, DrawIsTheFirstIdWhoseRunningWeightExceedsUTimesTotal) {
  // n equal logits: equal weights w, total n w, so the token is floor(u * n).
  for (int n : {2, 8, 10}) {
    const std::vector<float> l(size_t(n), 0.0f);
    for (uint64_t step = 0; step < 200; ++step) {
      const int32_t want = int32_t(std::floor(sample_uniform(2024, step) * n));
      ASSERT_EQ(draw(l, plain(1.0f), 2024, step), want) << n << " " << step;
    }
  }
}

TEST(SampleRow, SameSeedAndStepSameTokenDifferentSeedsDiffer) {
  const std::vector<float> l = make_logits(1000, 3, 2.0f);
  SamplingParams p;  // defaults: top_k 40, top_p 0.95, min_p 0.05, temperature 0.8
  std::vector<int32_t> ta, tb, tc;
  for (uint64_t step = 0; step < 200; ++step) {
    ta.push_back(draw(l, p, 1234, step));
    tc.push_back(draw(l, p, 1235, step));
  }
  for (uint64_t step = 200; step-- > 0;) tb.insert(tb.begin(), draw(l, p, 1234, step));  // any order
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  // And the steps of one seed are not one token over and over.
  std::sort(ta.begin(), ta.end());
  EXPECT_GT(std::unique(ta.begin(), ta.end()) - ta.begin(), 5);
}

TEST(SampleRow, EmpiricalDistributionMatchesSoftmax) {
  const int draws = 20000;
  const std::vector<float> l = make_logits(16, 5, 3.0f);
  for (float t : {1.0f, 0.5f, 2.0f}) {
    std::vector<int> h = histogram(l, plain(t), 777, draws);
    const double chi = chi_square(h, softmax(l, t), draws);
    std::printf("temperature %.1f: chi-square %.2f (15 dof)\n", t, chi);
    EXPECT_LT(chi, 37.7) << "temperature " << t;  // p = 0.001 for 15 dof
  }
}

// ---------------------------------------------------------------------------------------
// The logits processor: penalties and logit_bias as LogitEdits.

TEST(LogitsProcessor, NoPenaltiesNoBiasIsInactive) {
  const std::vector<int32_t> hist = {0, 1, 1, 2};
  SamplingParams p = plain(1.0f);
  LogitsProcessor lp(p, hist);
  EXPECT_FALSE(lp.active());
  EXPECT_FALSE(lp.needs_history());
  lp.push(3);
  EXPECT_TRUE(edits_by_id(lp).empty());
  // Penalties with a window of 0 are off too.
  p.repeat_penalty = 1.3f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.5f;
  p.repeat_last_n = 0;
  LogitsProcessor off(p, hist);
  EXPECT_FALSE(off.active());
  EXPECT_FALSE(off.needs_history());
  EXPECT_TRUE(edits_by_id(off).empty());
}

TEST(LogitsProcessor, NeedsHistoryOnlyWithPenalties) {
  const std::vector<int32_t> hist = {1};
  SamplingParams p = plain(1.0f);
  p.logit_bias = {{2, 3.0f}};
  LogitsProcessor bias_only(p, hist);
  EXPECT_TRUE(bias_only.active());
  EXPECT_FALSE(bias_only.needs_history());
  bias_only.push(2);  // the history does not matter to a bias
  auto e = edits_by_id(bias_only);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e.begin()->first, 2);

  for (int which = 0; which < 3; ++which) {
    SamplingParams q = plain(1.0f);
    (which == 0 ? q.repeat_penalty : which == 1 ? q.presence_penalty : q.frequency_penalty) = 1.5f;
    LogitsProcessor lp(q, hist);
    EXPECT_TRUE(lp.active()) << which;
    EXPECT_TRUE(lp.needs_history()) << which;
  }
}

TEST(LogitsProcessor, RepeatPenaltyDividesPositiveAndMultipliesNegative) {
  SamplingParams p = plain(0.0f);
  p.repeat_penalty = 1.5f;
  const std::vector<int32_t> hist0 = {0};
  const std::vector<float> a = {2.0f, 1.9f, 0.0f, -5.0f};
  EXPECT_EQ(greedy(processed(p, {}, a)), 0);
  std::vector<float> pa = processed(p, hist0, a);
  EXPECT_FLOAT_EQ(pa[0], 2.0f / 1.5f);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_EQ(pa[i], a[i]) << i;  // untouched
  EXPECT_EQ(greedy(pa), 1);                                                 // 2 / 1.5 < 1.9
  std::vector<float> pb = processed(p, hist0, {-1.0f, -1.2f, -9.0f, -9.0f});
  EXPECT_FLOAT_EQ(pb[0], -1.0f * 1.5f);
  EXPECT_EQ(greedy(pb), 1);                                                 // -1 * 1.5 < -1.2
  EXPECT_EQ(greedy(processed(p, hist0, {2.0f, 1.2f, 0.0f, -5.0f})), 0);     // 1.33 > 1.2
  // Zero stays zero; a repeated token is penalised once, not once per occurrence.
  std::vector<float> pc = processed(p, {0, 1, 1, 1}, {0.0f, 3.0f, 1.0f, 1.0f});
  EXPECT_EQ(pc[0], 0.0f);
  EXPECT_FLOAT_EQ(pc[1], 3.0f / 1.5f);
  // A penalty below 1 encourages repetition.
  p.repeat_penalty = 0.5f;
  std::vector<float> pd = processed(p, {0, 1}, {1.0f, -1.0f, 1.5f, -0.4f});
  EXPECT_FLOAT_EQ(pd[0], repeat_penalized(1.0f, 0.5f));
  EXPECT_FLOAT_EQ(pd[1], repeat_penalized(-1.0f, 0.5f));
  EXPECT_EQ(greedy(pd), 0);  // 2 > 1.5
}

TEST(LogitsProcessor, RepeatWindowCountsOnlyTheLastTokens) {
  const std::vector<float> l = {2.0f, 2.1f};
  const std::vector<int32_t> hist = {0, 1};
  auto argmax_with = [&](int last_n) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = last_n;
    return greedy(processed(p, hist, l));
  };
  EXPECT_EQ(argmax_with(1), 0);   // only 1 penalized: 1.4 < 2.0
  EXPECT_EQ(argmax_with(-1), 1);  // both: 1.33 < 1.4
  EXPECT_EQ(argmax_with(64), 1);
  EXPECT_EQ(argmax_with(0), 1);   // off
}

TEST(LogitsProcessor, WindowSlidesAsTokensArePushed) {
  // frequency_penalty 1: each edit subtracts exactly the token's count in the window.
  SamplingParams p = plain(1.0f);
  p.frequency_penalty = 1.0f;
  p.repeat_last_n = 3;
  const std::vector<int32_t> hist = {5, 0, 1, 1};  // the window holds the last 3: {0, 1, 1}
  LogitsProcessor lp(p, hist);
  auto counts = [&]() {
    std::map<int32_t, float> m;
    for (const auto& [id, e] : edits_by_id(lp)) {
      EXPECT_EQ(e.penalty, 1.0f);
      m[id] = e.subtract;
    }
    return m;
  };
  EXPECT_EQ(counts(), (std::map<int32_t, float>{{0, 1.f}, {1, 2.f}}));
  lp.push(2);  // {1, 1, 2}
  EXPECT_EQ(counts(), (std::map<int32_t, float>{{1, 2.f}, {2, 1.f}}));
  lp.push(2);  // {1, 2, 2}
  EXPECT_EQ(counts(), (std::map<int32_t, float>{{1, 1.f}, {2, 2.f}}));
  lp.push(3);  // {2, 2, 3}
  EXPECT_EQ(counts(), (std::map<int32_t, float>{{2, 2.f}, {3, 1.f}}));
  lp.push(4);
  lp.push(4);  // {3, 4, 4}
  EXPECT_EQ(counts(), (std::map<int32_t, float>{{3, 1.f}, {4, 2.f}}));
  for (int i = 0; i < 7; ++i) lp.push(6);  // the ring wraps more than once
  EXPECT_EQ(counts(), (std::map<int32_t, float>{{6, 3.f}}));

  // Building from a history is the same as pushing it token by token.
  const std::vector<int32_t> longer = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  for (int last_n : {1, 3, 4, 64, -1}) {
    p.repeat_last_n = last_n;
    LogitsProcessor built(p, longer), pushed(p, {});
    for (int32_t id : longer) pushed.push(id);
    auto a = edits_by_id(built), b = edits_by_id(pushed);
    ASSERT_EQ(a.size(), b.size()) << last_n;
    std::map<int32_t, int> want;  // counted here from the tail of the history
    const size_t n = last_n < 0 ? longer.size() : std::min(longer.size(), size_t(last_n));
    for (size_t i = longer.size() - n; i < longer.size(); ++i) ++want[longer[i]];
    ASSERT_EQ(a.size(), want.size()) << last_n;
    for (const auto& [id, c] : want) {
      ASSERT_TRUE(a.count(id) && b.count(id)) << last_n << " " << id;
      EXPECT_EQ(a[id].subtract, float(c)) << last_n << " " << id;
      EXPECT_EQ(b[id].subtract, float(c)) << last_n << " " << id;
    }
  }
}

TEST(LogitsProcessor, FrequencyAndPresencePenalties) {
  const std::vector<float> l = {3.0f, 2.0f};
  const std::vector<int32_t> three = {0, 0, 0}, two = {0, 0};
  SamplingParams p = plain(0.0f);
  p.frequency_penalty = 0.4f;
  std::vector<float> f3 = processed(p, three, l);
  EXPECT_FLOAT_EQ(f3[0], 3.0f - 3 * 0.4f);
  EXPECT_EQ(f3[1], 2.0f);
  EXPECT_EQ(greedy(f3), 1);                       // 3 - 1.2 < 2
  EXPECT_EQ(greedy(processed(p, two, l)), 0);     // 3 - 0.8 > 2
  p = plain(0.0f);
  p.presence_penalty = 1.5f;
  EXPECT_FLOAT_EQ(processed(p, three, l)[0], 3.0f - 1.5f);
  EXPECT_FLOAT_EQ(processed(p, {0}, l)[0], 3.0f - 1.5f);  // the count does not matter
  EXPECT_EQ(greedy(processed(p, three, l)), 1);
  p.presence_penalty = 0.5f;
  EXPECT_EQ(greedy(processed(p, three, l)), 0);
  // Negative penalties encourage repetition.
  p = plain(0.0f);
  p.frequency_penalty = -1.0f;
  EXPECT_EQ(greedy(processed(p, two, {1.0f, 2.0f})), 0);
  // All three together: the repeat penalty first, then count * frequency + presence.
  p = plain(0.0f);
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.25f;
  p.presence_penalty = 0.5f;
  std::vector<float> all = processed(p, {0, 1, 1, 1}, {4.0f, -2.0f, 1.0f});
  EXPECT_FLOAT_EQ(all[0], 4.0f / 2.0f - (1 * 0.25f + 0.5f));
  EXPECT_FLOAT_EQ(all[1], -2.0f * 2.0f - (3 * 0.25f + 0.5f));
  EXPECT_EQ(all[2], 1.0f);
}

TEST(LogitsProcessor, LogitBiasAddsAndMinus100Bans) {
  SamplingParams p = plain(0.0f);
  p.logit_bias = {{1, 2.5f}, {3, -1.0f}, {0, -100.0f}};
  LogitsProcessor lp(p, {});
  EXPECT_TRUE(lp.active());
  const std::vector<float> l = {5.0f, 1.0f, 0.5f, 2.0f};
  std::vector<float> b = processed(lp, l);
  EXPECT_EQ(b[0], kNegInf);
  EXPECT_FLOAT_EQ(b[1], 1.0f + 2.5f);
  EXPECT_EQ(b[2], 0.5f);
  EXPECT_FLOAT_EQ(b[3], 2.0f - 1.0f);
  EXPECT_EQ(greedy(b), 1);
  EXPECT_EQ(edits_by_id(lp).size(), 3u);
  // Bias 100 is allowed and a ban holds however large the logit.
  p.logit_bias = {{2, 100.0f}, {3, -100.0f}};
  std::vector<float> c = processed(p, {}, {1e30f, 0.0f, -50.0f, 1e30f});
  EXPECT_FLOAT_EQ(c[2], 50.0f);
  EXPECT_EQ(c[3], kNegInf);
}

TEST(LogitsProcessor, BannedTokensAreNeverDrawn) {
  std::vector<float> l = make_logits(32, 6, 1.0f);
  const int32_t best = argmax(l);
  SamplingParams p = plain(2.0f);
  p.logit_bias = {{best, -100.0f}, {7, -100.0f}};
  if (best == 7) p.logit_bias[1].first = 8;
  const std::vector<float> banned = processed(p, {}, l);
  for (uint64_t step = 0; step < 3000; ++step) {
    const int32_t t = draw(banned, p, 3, step);
    ASSERT_NE(t, p.logit_bias[0].first);
    ASSERT_NE(t, p.logit_bias[1].first);
  }
  std::vector<float> rest = l;
  rest[size_t(best)] = kNegInf;
  EXPECT_EQ(greedy(banned), argmax(rest));
}

TEST(LogitsProcessor, PenalisedAndBiasedTokenGetsOneMergedEdit) {
  SamplingParams p = plain(1.0f);
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.logit_bias = {{0, 3.0f}, {2, -100.0f}, {4, 1.0f}};
  const std::vector<int32_t> hist = {0, 0, 1, 2};
  LogitsProcessor lp(p, hist);
  auto e = edits_by_id(lp);  // fails on a repeated id
  EXPECT_EQ(e.size(), 4u);   // 0, 1, 2 from the history; 4 from the bias
  for (int32_t id : {0, 1, 2, 4}) EXPECT_TRUE(e.count(id)) << id;
  const std::vector<float> l = {6.0f, -1.0f, 8.0f, 0.5f, 1.0f};
  std::vector<float> got = processed(lp, l);
  EXPECT_FLOAT_EQ(got[0], repeat_penalized(6.0f, 2.0f) - (2 * 0.5f + 0.25f) + 3.0f);
  EXPECT_FLOAT_EQ(got[1], repeat_penalized(-1.0f, 2.0f) - (1 * 0.5f + 0.25f));
  EXPECT_EQ(got[2], kNegInf);  // penalised and banned: banned
  EXPECT_EQ(got[3], 0.5f);
  EXPECT_FLOAT_EQ(got[4], 1.0f + 1.0f);  // bias only: no repeat penalty on a token not seen
  EXPECT_EQ(e[4].penalty, 1.0f);

  // A repeated id in logit_bias is one edit (the last value, as in a JSON object).
  SamplingParams q = plain(1.0f);
  q.logit_bias = {{1, 5.0f}, {1, 2.0f}};
  LogitsProcessor dup(q, {});
  auto d = edits_by_id(dup);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FLOAT_EQ(processed(dup, {0.0f, 1.0f})[1], 1.0f + 2.0f);
}

TEST(LogitsProcessor, EditsApplyOnTheStochasticPathAndDoNotLeak) {
  SamplingParams p = plain(1.0f);
  p.top_k = 1;
  p.repeat_penalty = 2.0f;
  const std::vector<float> l = {3.0f, 2.0f, 1.0f};
  const std::vector<int32_t> hist = {0};
  LogitsProcessor lp(p, hist);
  EXPECT_EQ(draw(processed(lp, l), p, 1, 0), 1);  // 1.5 < 2
  EXPECT_EQ(draw(l, p, 1, 1), 0);                 // the row itself is not changed
  EXPECT_EQ(draw(processed(lp, l), p, 1, 2), 1);  // edits() does not consume anything
  // Edits for another batch row carry that row.
  std::vector<LogitEdit> out;
  lp.edits(5, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].row, 5);
  EXPECT_EQ(out[0].id, 0);
}

// ---------------------------------------------------------------------------------------
// Validation.

TEST(Validate, RejectsBadParams) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  SamplingParams p;
  for (float v : {-0.1f, nan, inf}) {
    p.temperature = v;
    expect_invalid(p, "temperature");
  }
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
  for (float v : {0.0f, -1.0f, nan, inf}) {
    p.repeat_penalty = v;
    expect_invalid(p, "repeat_penalty");
  }
  p = {};
  p.repeat_last_n = -2;
  expect_invalid(p, "repeat_last_n");
  p = {};
  for (float v : {nan, inf, -inf}) {
    p.presence_penalty = v;
    expect_invalid(p, "presence_penalty");
  }
  p = {};
  for (float v : {nan, inf, -inf}) {
    p.frequency_penalty = v;
    expect_invalid(p, "frequency_penalty");
  }
  // logit_bias: ids inside the vocabulary, values in [-100, 100].
  for (int32_t id : {-1, 8, 1000}) {
    p = {};
    p.logit_bias = {{0, 1.0f}, {id, 1.0f}};
    expect_invalid(p, "logit_bias", 8);
  }
  for (float v : {100.5f, -100.5f, nan, inf, -inf}) {
    p = {};
    p.logit_bias = {{3, v}};
    expect_invalid(p, "logit_bias", 8);
  }
  // Allowed edges.
  p = {};
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.min_p = -1.0f;
  p.top_k = -5;
  p.repeat_last_n = -1;
  p.repeat_penalty = 0.01f;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.logit_bias = {{0, -100.0f}, {7, 100.0f}};
  EXPECT_NO_THROW(validate(p, 8));
  p = {};
  p.min_p = 1.0f;
  EXPECT_NO_THROW(validate(p, 8));
  EXPECT_NO_THROW(validate(SamplingParams{}, 8));
}

// ---------------------------------------------------------------------------------------
// Speed.

TEST(SampleRow, FullVocabSpeedSanity) {
  const int32_t n = 262144;
  const std::vector<float> l = make_logits(size_t(n), 21, 12.0f);
  std::vector<int32_t> hist(64);
  for (size_t i = 0; i < hist.size(); ++i) hist[i] = int32_t(i * 4099 % size_t(n));
  struct Case {
    const char* name;
    SamplingParams p;
  };
  SamplingParams defaults;
  defaults.repeat_penalty = 1.1f;
  SamplingParams top_p_only = plain(0.8f);
  top_p_only.top_p = 0.95f;
  SamplingParams min_p_only = plain(0.8f);
  min_p_only.min_p = 0.05f;
  const Case cases[] = {{"defaults+repeat", defaults}, {"top_p only", top_p_only},
                        {"min_p only", min_p_only},    {"no filters", plain(1.0f)},
                        {"greedy", plain(0.0f)}};
  std::vector<float> row(l.size());
  std::vector<LogitEdit> edits;
  for (const Case& c : cases) {
    LogitsProcessor lp(c.p, hist);
    const int iters = 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      std::copy(l.begin(), l.end(), row.begin());
      edits.clear();
      lp.edits(0, edits);
      for (const LogitEdit& e : edits) apply_logit_edit(row.data(), e);
      const int32_t t = sample_row(row.data(), n, row_sampling(c.p, 1, uint64_t(i)));
      ASSERT_GE(t, 0);
      ASSERT_LT(t, n);
      lp.push(t);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("vocab %d, %-16s %.3f ms/token\n", n, c.name, ms / iters);
  }
}

// ---------------------------------------------------------------------------------------
// Logprobs.

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
  EXPECT_EQ(top[0].first, argmax(l));
  for (size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].second, top[i].second);
  EXPECT_LT(top[0].second, 0.0f);
}

TEST(TopLogprobs, RejectsNaNAndFullyMaskedRows) {
  EXPECT_THROW(top_logprobs(std::vector<float>{1.0f, std::nanf(""), 0.0f}, 2), Error);
  EXPECT_THROW(top_logprobs(std::vector<float>(4, kNegInf), 2), Error);
}

TEST(TokenLogprob, IsLogSoftmaxOfTheEntry) {
  for (const std::vector<float>& l :
       {std::vector<float>{1.0f, 3.0f, kNegInf, 3.0f, -2.0f, 0.5f}, make_logits(1000, 9, 8.0f)}) {
    const std::vector<double> q = softmax(l, 1.0);
    for (size_t i = 0; i < l.size(); ++i) {
      const float lp = token_logprob(l, int32_t(i));
      if (q[i] == 0.0)
        EXPECT_EQ(lp, kNegInf) << i;
      else
        EXPECT_NEAR(lp, std::log(q[i]), 1e-4) << i;
    }
  }
  // Large logits do not overflow.
  const std::vector<float> big = {1000.0f, 1000.0f};
  EXPECT_NEAR(token_logprob(big, 1), std::log(0.5), 1e-6);
}

}  // namespace
}  // namespace brisk
