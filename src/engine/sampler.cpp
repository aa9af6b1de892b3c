// Validation, the per-step row settings, the logits processors (penalties and logit_bias
// as LogitEdits) and logprobs. The draw itself is the backend's sample op.
#include "engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.hpp"

namespace brisk {
namespace {

Error bad(const char* field, const std::string& what, double got) {
  return Error(ErrorCode::kInvalidArgument,
               std::string("sampling parameter ") + field + " " + what + ", got " + std::to_string(got), field);
}

// OpenAI: "values between -100 and 100"; -100 "should result in a ban".
constexpr float kBanBias = -100.f;

}  // namespace

void validate(const SamplingParams& p, int64_t vocab) {
  if (!(std::isfinite(p.temperature) && p.temperature >= 0.0f))
    throw bad("temperature", "must be a finite number >= 0", p.temperature);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) throw bad("top_p", "must be in (0, 1]", p.top_p);
  if (std::isnan(p.min_p) || p.min_p > 1.0f) throw bad("min_p", "must be <= 1", p.min_p);
  if (!(std::isfinite(p.repeat_penalty) && p.repeat_penalty > 0.0f))
    throw bad("repeat_penalty", "must be a finite number > 0", p.repeat_penalty);
  if (p.repeat_last_n < -1) throw bad("repeat_last_n", "must be >= -1", p.repeat_last_n);
  if (!std::isfinite(p.presence_penalty)) throw bad("presence_penalty", "must be finite", p.presence_penalty);
  if (!std::isfinite(p.frequency_penalty)) throw bad("frequency_penalty", "must be finite", p.frequency_penalty);
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || id >= vocab)
      throw Error(ErrorCode::kInvalidArgument,
                  "logit_bias names token " + std::to_string(id) + ", outside the vocabulary of " +
                      std::to_string(vocab),
                  "logit_bias");
    if (!(std::isfinite(bias) && bias >= -100.f && bias <= 100.f)) throw bad("logit_bias", "values must be in [-100, 100]", bias);
  }
}

RowSampling row_sampling(const SamplingParams& p, uint64_t seed, uint64_t step) {
  RowSampling r;
  r.temperature = p.temperature;
  r.top_k = p.top_k;
  r.top_p = p.top_p;
  r.min_p = p.min_p;
  r.seed = seed;
  r.step = step;
  return r;
}

LogitsProcessor::LogitsProcessor(const SamplingParams& params, std::span<const int32_t> history) : p_(params) {
  penalties_ = p_.repeat_last_n != 0 &&
               (p_.repeat_penalty != 1.f || p_.presence_penalty != 0.f || p_.frequency_penalty != 0.f);
  std::unordered_map<int32_t, float> merged;  // a repeated id: the last value wins, as in a JSON object
  for (const auto& [id, b] : p_.logit_bias) merged[id] = b;
  bias_.assign(merged.begin(), merged.end());
  std::sort(bias_.begin(), bias_.end());
  if (!penalties_) return;
  if (p_.repeat_last_n > 0) window_.reserve(size_t(std::min(p_.repeat_last_n, 4096)));  // (grows past)
  for (int32_t id : history) push(id);
}

void LogitsProcessor::count(int32_t id, int delta) {
  auto it = counts_.try_emplace(id, 0).first;
  if ((it->second += delta) == 0) counts_.erase(it);
}

void LogitsProcessor::push(int32_t id) {
  if (!penalties_) return;
  if (p_.repeat_last_n < 0 || window_.size() < size_t(p_.repeat_last_n)) {
    window_.push_back(id);
  } else {  // full ring: the oldest token leaves the window
    count(window_[head_], -1);
    window_[head_] = id;
    head_ = (head_ + 1) % window_.size();
  }
  count(id, +1);
}

void LogitsProcessor::edits(int32_t row, std::vector<LogitEdit>& out) const {
  auto bias_of = [&](int32_t id) -> const float* {
    auto it = std::lower_bound(bias_.begin(), bias_.end(), std::pair<int32_t, float>{id, -INFINITY});
    return it != bias_.end() && it->first == id ? &it->second : nullptr;
  };
  auto subtract_for = [](float bias) { return bias <= kBanBias ? INFINITY : -bias; };
  for (const auto& [id, c] : counts_) {
    LogitEdit e{row, id, p_.repeat_penalty, float(c) * p_.frequency_penalty + p_.presence_penalty};
    if (const float* b = bias_of(id)) e.subtract = *b <= kBanBias ? INFINITY : e.subtract - *b;
    out.push_back(e);
  }
  for (const auto& [id, b] : bias_)
    if (!counts_.contains(id)) out.push_back(LogitEdit{row, id, 1.f, subtract_for(b)});
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
  // Descending logit, then ascending id: a strict total order, the same on every library.
  std::partial_sort(entries.begin(), entries.begin() + ptrdiff_t(n), entries.end(), [](const Entry& a, const Entry& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  });
  std::vector<std::pair<int32_t, float>> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.emplace_back(entries[i].id, float(double(entries[i].logit) - log_z));
  return out;
}

float token_logprob(std::span<const float> logits, int32_t id) {
  float mx = -INFINITY;
  for (float l : logits) mx = std::max(mx, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - mx);
  return float(double(logits[size_t(id)]) - mx - std::log(sum));
}

}  // namespace brisk
