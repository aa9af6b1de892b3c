// The CPU's own ceilings for `brisk bench`: the memory read bandwidth (decode streams the
// weights, so reads are what it needs) and the rate of this backend's Q8_0 product (the fast
// mode's tiled int8 kernels) on a prefill-shaped product, both with the backend's threads.
#include <algorithm>
#include <chrono>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "quant/quantize.hpp"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace brisk {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Sums 64-bit words so that the loads cannot be dropped (four SSE2 streams: enough to keep a
// core's share of the memory bus busy without wider vectors in the baseline build).
uint64_t sum_words(const uint64_t* p, int64_t n) {
#if defined(__x86_64__)
  __m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a = _mm_add_epi64(a, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i)));
    b = _mm_add_epi64(b, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 2)));
    c = _mm_add_epi64(c, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 4)));
    d = _mm_add_epi64(d, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 6)));
  }
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), _mm_add_epi64(_mm_add_epi64(a, b), _mm_add_epi64(c, d)));
  uint64_t s = lanes[0] + lanes[1];
#else
  uint64_t s = 0;
  int64_t i = 0;
#endif
  for (; i < n; ++i) s += p[i];
  return s;
}

}  // namespace

double CpuBackend::measure_bandwidth() {
  constexpr int64_t kWords = (int64_t(512) << 20) / 8;  // 512 MiB: far past any cache
  std::vector<uint64_t> buf(static_cast<size_t>(kWords));  // operator new aligns to 16 bytes on x86-64
  uint64_t* p = buf.data();
  pool_.parallel_for(kWords, [&](int64_t b, int64_t e) { std::fill(p + b, p + e, uint64_t(b)); });
  double best = 1e30;
  volatile uint64_t sink = 0;
  for (int rep = 0; rep < 4; ++rep) {
    std::vector<uint64_t> part(size_t(pool_.size()), 0);
    const auto t0 = std::chrono::steady_clock::now();
    pool_.parallel_for(kWords, [&](int64_t b, int64_t e) {
      part[size_t(b * pool_.size() / kWords)] = sum_words(p + b, e - b);
    });
    best = std::min(best, seconds_since(t0));
    for (uint64_t s : part) sink = sink + s;
  }
  return double(kWords) * 8 / best;
}

double CpuBackend::measure_matmul_rate() {
  // Q8_0 4096 x 4096 (18 MB of weights) against 64 tokens, the prefill's shape, through this
  // backend's own product (the tiled int8 kernels in the fast mode).
  constexpr int64_t kRows = 4096, kCols = 4096, kTokens = 64;
  std::vector<float> x(size_t(kCols * kTokens));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 2654435761u % 2001) - 1000) / 1000.f;
  DeviceWeight w;
  w.dtype = DType::Q8_0;
  w.rows = kRows;
  w.cols = kCols;
  w.row_bytes = *dtype_bytes(DType::Q8_0, kCols);
  std::vector<uint8_t> bytes(size_t(kRows * w.row_bytes));
  for (int64_t r = 0; r < kRows; ++r)
    quantize_row(DType::Q8_0, x.data() + (r % kTokens) * kCols, bytes.data() + r * w.row_bytes, kCols);
  w.data = bytes.data();
  std::vector<float> y(size_t(kRows * kTokens));
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    matmul(x.data(), kTokens, w, y.data(), nullptr, false);
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * kRows * kCols * kTokens / best;
}

}  // namespace brisk
