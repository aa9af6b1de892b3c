// CPU rope and causal attention (GQA, optional sliding window) over a sequence's KV cache.
// Softmax subtracts the row maximum; scores and sums are float32 in position order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "quant/quantize.hpp"

namespace brisk {

void CpuBackend::rope(float* x, int64_t n, int n_heads, const int32_t* positions, const RopeConfig& cfg) {
  const int hd = cfg.head_dim, half = hd / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  rope_inverse_frequencies(cfg, inv.data());
  pool_.parallel_for(n, [&](int64_t t0, int64_t t1) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t t = t0; t < t1; ++t) {
      float pos = float(positions[t]) / cfg.linear_factor;
      for (int i = 0; i < half; ++i) {
        float angle = pos * inv[size_t(i)];  // float32 product, as HF does
        cs[size_t(i)] = std::cos(angle);
        sn[size_t(i)] = std::sin(angle);
      }
      for (int h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * hd;
        for (int i = 0; i < half; ++i) {
          int a = cfg.style == RopeStyle::Half ? i : 2 * i;
          int b = cfg.style == RopeStyle::Half ? i + half : 2 * i + 1;
          float x0 = v[a], x1 = v[b];
          v[a] = x0 * cs[size_t(i)] - x1 * sn[size_t(i)];
          v[b] = x1 * cs[size_t(i)] + x0 * sn[size_t(i)];
        }
      }
    }
  });
}

void CpuBackend::attention(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                           const int32_t* seqs, const AttentionConfig& cfg, float* out) {
  const int hd = cfg.head_dim;
  const int group = cfg.n_heads / cfg.n_kv_heads;
  const KvPages pages = kv.pages(layer);
  const auto* kc = static_cast<const float*>(kv.k);  // float32: this backend's caches are
  const auto* vc = static_cast<const float*>(kv.v);
  pool_.parallel_for(n * cfg.n_heads, [&](int64_t w0, int64_t w1) {
    std::vector<float> scores;
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t t = w / cfg.n_heads;
      const int h = int(w % cfg.n_heads);
      const int kvh = h / group;
      const int64_t p = positions[t];
      const int64_t lo = cfg.window > 0 ? std::max<int64_t>(0, p - cfg.window + 1) : 0;
      const float* qv = q + (t * cfg.n_heads + h) * hd;
      const int64_t seq = seqs ? seqs[t] : 0;
      scores.resize(size_t(p - lo + 1));
      float mx = -INFINITY;
      for (int64_t j = lo; j <= p; ++j) {
        float s = dot_row(DType::F32, kc + pages.row(seq, kvh, j), qv, hd) * cfg.scale;
        scores[size_t(j - lo)] = s;
        mx = std::max(mx, s);
      }
      float sum = 0.f;
      for (auto& s : scores) {
        s = std::exp(s - mx);
        sum += s;
      }
      float* o = out + (t * cfg.n_heads + h) * hd;
      std::fill(o, o + hd, 0.f);
      for (int64_t j = lo; j <= p; ++j) {
        const float pj = scores[size_t(j - lo)] / sum;
        const float* vv = vc + pages.row(seq, kvh, j);
        axpy(pj, vv, o, hd);
      }
    }
  });
}

}  // namespace brisk
