#include <cmath>

#include "backend/backend.hpp"

namespace brisk {

void rope_inverse_frequencies(const RopeConfig& cfg, float* inv_freq) {
  const int half = cfg.head_dim / 2;
  for (int i = 0; i < half; ++i) {
    // As HF computes it: float32 exponent, double power.
    double inv = 1.0 / std::pow(double(cfg.theta), double(float(2 * i) / float(cfg.head_dim)));
    if (cfg.llama3_factor > 0.f) {
      const double pi = 3.14159265358979323846;
      double low_wavelen = cfg.llama3_original_context / cfg.llama3_low_freq_factor;
      double high_wavelen = cfg.llama3_original_context / cfg.llama3_high_freq_factor;
      double wavelen = 2 * pi / inv;
      if (wavelen > low_wavelen) {
        inv /= cfg.llama3_factor;
      } else if (wavelen >= high_wavelen) {
        double smooth = (cfg.llama3_original_context / wavelen - cfg.llama3_low_freq_factor) /
                        (cfg.llama3_high_freq_factor - cfg.llama3_low_freq_factor);
        inv = (1 - smooth) * inv / cfg.llama3_factor + smooth * inv;
      }
    }
    if (cfg.freq_factors) inv /= cfg.freq_factors[i];
    inv_freq[i] = float(inv);
  }
}

}  // namespace brisk
