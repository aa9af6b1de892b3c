// The sampler's chain, step by step (see sampler.hpp for the order and why).
// Each filter narrows candidates_ in place. Only top-k sorts its k survivors; top-p
// finds its cutoff with a mass histogram over logit buckets and sorts only the one
// bucket the cutoff falls in, so it stays linear at a 262144 vocab.
#include "engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "base/error.hpp"

namespace brisk {
namespace {

Error bad(const char* field, const std::string& what, double got) {
  return Error(ErrorCode::kInvalidArgument,
               std::string("sampling parameter ") + field + " " + what + ", got " + std::to_string(got),
               field);
}

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Descending logit, then ascending id: a strict total order, so every partial
// sort gives the same result on every standard library.
// A function object, not a function pointer, so the sorts inline it.
struct Better {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  }
};
constexpr Better better;

}  // namespace

void validate(const SamplingParams& p) {
  if (!(std::isfinite(p.temperature) && p.temperature >= 0.0f))
    throw bad("temperature", "must be a finite number >= 0", p.temperature);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) throw bad("top_p", "must be in (0, 1]", p.top_p);
  if (std::isnan(p.min_p) || p.min_p > 1.0f) throw bad("min_p", "must be <= 1", p.min_p);
  if (!(std::isfinite(p.repeat_penalty) && p.repeat_penalty > 0.0f))
    throw bad("repeat_penalty", "must be a finite number > 0", p.repeat_penalty);
  if (p.repeat_last_n < -1) throw bad("repeat_last_n", "must be >= -1", p.repeat_last_n);
  if (!std::isfinite(p.presence_penalty))
    throw bad("presence_penalty", "must be finite", p.presence_penalty);
  if (!std::isfinite(p.frequency_penalty))
    throw bad("frequency_penalty", "must be finite", p.frequency_penalty);
}

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size)
    : params_(params), vocab_size_(vocab_size) {
  validate(params_);
  if (vocab_size <= 0) throw bad("vocab_size", "must be > 0", vocab_size);
  if (params_.seed) {
    reset(*params_.seed);
  } else {
    std::random_device rd;
    reset((uint64_t(rd()) << 32) ^ rd());
  }
}

void Sampler::reset(uint64_t seed) {
  // splitmix64 expands the seed into xoshiro's state (never all zero).
  uint64_t x = seed;
  for (uint64_t& s : rng_) s = splitmix64(x);
}

// xoshiro256** -> 53 random bits -> a double in [0, 1), identical everywhere.
double Sampler::next_uniform() {
  const uint64_t result = rotl(rng_[1] * 5, 7) * 9;
  const uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = rotl(rng_[3], 45);
  return double(result >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  if (logits.size() != size_t(vocab_size_))
    throw Error(ErrorCode::kInvalidArgument,
                "logits row has " + std::to_string(logits.size()) + " entries, vocab is " +
                    std::to_string(vocab_size_),
                "logits");
  work_.assign(logits.begin(), logits.end());
  for (float l : work_)
    if (std::isnan(l)) throw Error(ErrorCode::kInvalidArgument, "logits contain NaN", "logits");
  apply_penalties(history);

  if (params_.temperature == 0.0f) return argmax();
  gather_candidates();
  filter_top_k();
  filter_top_p();
  filter_min_p();
  return draw();
}

void Sampler::apply_penalties(std::span<const int32_t> history) {
  const SamplingParams& p = params_;
  if (p.repeat_last_n == 0 || history.empty()) return;
  if (p.repeat_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return;
  size_t n = history.size();
  if (p.repeat_last_n > 0) n = std::min(n, size_t(p.repeat_last_n));
  const std::span<const int32_t> window = history.last(n);
  for (int32_t t : window)
    if (t < 0 || t >= vocab_size_)
      throw Error(ErrorCode::kInvalidArgument,
                  "history holds token id " + std::to_string(t) + " outside the vocab", "history");

  if (counts_.empty()) counts_.assign(size_t(vocab_size_), 0);
  for (int32_t t : window)
    if (counts_[t]++ == 0) touched_.push_back(t);
  for (int32_t t : touched_) {
    float& l = work_[t];
    if (p.repeat_penalty != 1.0f) l = l > 0.0f ? l / p.repeat_penalty : l * p.repeat_penalty;
    l -= float(counts_[t]) * p.frequency_penalty + p.presence_penalty;
    counts_[t] = 0;  // leave counts_ all-zero for the next call
  }
  touched_.clear();
}

int32_t Sampler::argmax() const {
  int32_t best = 0;
  for (int32_t i = 1; i < vocab_size_; ++i)
    if (work_[i] > work_[best]) best = i;  // strict: the lowest id wins ties
  if (work_[best] == -std::numeric_limits<float>::infinity())
    throw Error(ErrorCode::kInvalidArgument, "every token is masked (-inf)", "logits");
  return best;
}

void Sampler::gather_candidates() {
  candidates_.clear();
  for (int32_t i = 0; i < vocab_size_; ++i)
    if (work_[i] != -std::numeric_limits<float>::infinity()) candidates_.push_back({work_[i], i});
  if (candidates_.empty())
    throw Error(ErrorCode::kInvalidArgument, "every token is masked (-inf)", "logits");
  sorted_ = false;
}

void Sampler::filter_top_k() {
  const size_t k = size_t(params_.top_k);
  if (params_.top_k <= 0 || k >= candidates_.size()) return;
  auto mid = candidates_.begin() + ptrdiff_t(k);
  std::nth_element(candidates_.begin(), mid, candidates_.end(), better);
  candidates_.resize(k);
  std::sort(candidates_.begin(), candidates_.end(), better);
  sorted_ = true;
}

void Sampler::filter_top_p() {
  const size_t n = candidates_.size();
  if (params_.top_p >= 1.0f || n <= 1) return;
  float max_logit = candidates_[0].logit;
  if (!sorted_)
    for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  // Probability mass as 2^-40 fixed point (exp(-28) is below it; float exp is ample):
  // integer sums are exact, so the cutoff cannot depend on the order of summation.
  std::vector<uint64_t>& mass = mass_;  // by candidate index, computed once
  mass.resize(n);
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i)
    total += mass[i] = uint64_t(std::exp(candidates_[i].logit - max_logit) * 0x1.0p40f + 0.5f);
  const double target = double(params_.top_p) * double(total);

  if (sorted_) {  // after top-k: a plain scan
    uint64_t cum = 0;
    for (size_t i = 0; i < n; ++i) {
      cum += mass[i];
      if (double(cum) >= target) {  // keep the token that crosses top_p, as llama.cpp does
        candidates_.resize(i + 1);
        return;
      }
    }
    return;
  }

  // Unsorted (all tokens, id order): bucket the mass by distance below the max logit,
  // find the bucket where the running mass crosses top_p, and sort only that bucket.
  constexpr int kBuckets = 4096;
  constexpr double kRange = 32.0;  // nats; everything further down has zero mass
  auto bucket = [&](const Candidate& c) {
    return int(std::min<double>(kBuckets - 1, (double(max_logit) - c.logit) * (kBuckets / kRange)));
  };
  std::vector<uint64_t>& bucket_mass = bucket_mass_;
  bucket_mass.assign(kBuckets, 0);
  for (size_t i = 0; i < n; ++i) bucket_mass[size_t(bucket(candidates_[i]))] += mass[i];
  int crossing = kBuckets - 1;
  uint64_t above = 0;  // mass of the buckets before `crossing`
  for (int b = 0; b < kBuckets; ++b) {
    if (double(above + bucket_mass[size_t(b)]) >= target) {
      crossing = b;
      break;
    }
    above += bucket_mass[size_t(b)];
  }
  std::vector<Edge>& edge = edge_;
  edge.clear();
  for (size_t i = 0; i < n; ++i)
    if (bucket(candidates_[i]) == crossing) edge.push_back({candidates_[i].logit, candidates_[i].id, mass[i]});
  if (edge.empty()) return;  // unreachable: the buckets' mass sums to total >= target
  std::sort(edge.begin(), edge.end(), better);
  Candidate pivot{edge.back().logit, edge.back().id};
  uint64_t cum = above;
  for (const Edge& e : edge) {
    cum += e.mass;
    if (double(cum) >= target) {
      pivot = {e.logit, e.id};
      break;
    }
  }
  // Keep everything at or above the crossing token, still in id order, so the draw
  // walks the same order on every standard library.
  std::erase_if(candidates_, [&](const Candidate& c) { return better(pivot, c); });
}

void Sampler::filter_min_p() {
  if (params_.min_p <= 0.0f || candidates_.size() <= 1) return;
  float max_logit = candidates_[0].logit;
  if (!sorted_)
    for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  // p >= min_p * p_max  <=>  logit >= max_logit + log(min_p): no softmax needed.
  const double threshold = double(max_logit) + std::log(double(params_.min_p));
  std::erase_if(candidates_, [&](const Candidate& c) { return double(c.logit) < threshold; });
}

int32_t Sampler::draw() {
  float max_logit = candidates_[0].logit;
  for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  const double inv_t = 1.0 / double(params_.temperature);
  weights_.resize(candidates_.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    weights_[i] = std::exp(float((double(candidates_[i].logit) - max_logit) * inv_t));
    total += weights_[i];
  }
  const double u = next_uniform() * total;
  double cum = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cum += weights_[i];
    if (u < cum) return candidates_[i].id;
  }
  // u landed in the rounding gap at the top: the last token with nonzero weight.
  for (size_t i = candidates_.size(); i-- > 0;)
    if (weights_[i] > 0.0) return candidates_[i].id;
  return candidates_[0].id;
}

std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, int k) {
  struct Entry {
    float logit;
    int32_t id;
  };
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float l : logits) {
    if (std::isnan(l)) throw Error(ErrorCode::kInvalidArgument, "logits contain NaN", "logits");
    max_logit = std::max(max_logit, l);
  }
  if (max_logit == -std::numeric_limits<float>::infinity())
    throw Error(ErrorCode::kInvalidArgument, "every token is masked (-inf)", "logits");
  double total = 0.0;
  for (float l : logits) total += std::exp(double(l) - max_logit);
  const double log_z = double(max_logit) + std::log(total);

  const size_t n = std::min(logits.size(), size_t(std::max(k, 0)));
  std::vector<Entry> entries(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) entries[i] = {logits[i], int32_t(i)};
  std::partial_sort(entries.begin(), entries.begin() + ptrdiff_t(n), entries.end(), better);
  std::vector<std::pair<int32_t, float>> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.emplace_back(entries[i].id, float(double(entries[i].logit) - log_z));
  return out;
}

}  // namespace brisk
