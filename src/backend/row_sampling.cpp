#include "backend/row_sampling.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace brisk {

int32_t sample_row(const float* logits, int64_t vocab, const RowSampling& p) {
  int32_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = int32_t(i);
  const float mx = logits[best];
  // Greedy; and a row whose every token is banned (-inf) has nothing to weigh: the argmax, id 0.
  if (!(p.temperature > 0.f) || mx == -INFINITY) return best;

  // Cut values: a token survives when its logit is >= the cut. Only the filters that are on
  // pay for ordering the logits: top_k selects in linear time, and top_p sorts just the
  // survivors of top_k (all of the row only when top_k is off).
  float cut = -INFINITY;
  const bool by_k = p.top_k > 0 && p.top_k < vocab, by_p = p.top_p < 1.f;
  if (by_k || by_p) {
    std::vector<float> sorted(logits, logits + vocab);
    auto end = sorted.end();
    if (by_k) {
      std::nth_element(sorted.begin(), sorted.begin() + (p.top_k - 1), sorted.end(), std::greater<float>());
      cut = sorted[size_t(p.top_k - 1)];
      end = std::partition(sorted.begin(), sorted.end(), [cut](float v) { return v >= cut; });  // ties kept
    }
    if (by_p) {
      std::sort(sorted.begin(), end, std::greater<float>());
      const int64_t kept = end - sorted.begin();
      uint64_t total = 0;
      for (int64_t i = 0; i < kept; ++i) total += sample_fixed(std::exp(sorted[size_t(i)] - mx));
      const uint64_t target = uint64_t(double(p.top_p) * double(total));
      uint64_t run = 0;
      for (int64_t i = 0; i < kept; ++i) {
        run += sample_fixed(std::exp(sorted[size_t(i)] - mx));
        if (run >= target) {  // keep every token tied with this value
          cut = std::max(cut, sorted[size_t(i)]);
          break;
        }
      }
    }
  }
  cut = std::max(cut, min_p_floor(mx, p.min_p));

  const float inv_t = 1.f / p.temperature;
  thread_local std::vector<uint64_t> weight;  // each survivor's fixed-point weight, computed once
  weight.resize(size_t(vocab));
  uint64_t total = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    weight[size_t(i)] = logits[i] >= cut ? sample_fixed(std::exp((logits[i] - mx) * inv_t)) : 0;
    total += weight[size_t(i)];
  }
  const uint64_t target = uint64_t(sample_uniform(p.seed, p.step) * double(total));
  uint64_t run = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (!(logits[i] >= cut)) continue;
    run += weight[size_t(i)];
    if (run > target) return int32_t(i);
  }
  return best;  // only when every weight rounds to zero
}

}  // namespace brisk
