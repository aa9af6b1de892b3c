#include "backend/row_sampling.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace brisk {

int32_t sample_row(const float* logits, int64_t vocab, const RowSampling& p) {
  int32_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = int32_t(i);
  if (!(p.temperature > 0.f)) return best;
  const float mx = logits[best];

  // Cut values: a token survives when its logit is >= the cut.
  std::vector<float> sorted(logits, logits + vocab);
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  float cut = -INFINITY;
  int64_t kept = vocab;
  if (p.top_k > 0 && p.top_k < vocab) {
    cut = sorted[size_t(p.top_k - 1)];
    kept = std::upper_bound(sorted.begin(), sorted.end(), cut, std::greater<float>()) - sorted.begin();
  }
  if (p.top_p < 1.f) {
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
  cut = std::max(cut, min_p_floor(mx, p.min_p));

  const float inv_t = 1.f / p.temperature;
  uint64_t total = 0;
  for (int64_t i = 0; i < vocab; ++i)
    if (logits[i] >= cut) total += sample_fixed(std::exp((logits[i] - mx) * inv_t));
  const uint64_t target = uint64_t(sample_uniform(p.seed, p.step) * double(total));
  uint64_t run = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (!(logits[i] >= cut)) continue;
    run += sample_fixed(std::exp((logits[i] - mx) * inv_t));
    if (run > target) return int32_t(i);
  }
  return best;  // only when every weight rounds to zero
}

}  // namespace brisk
