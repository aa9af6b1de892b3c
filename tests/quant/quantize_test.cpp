// src/quant against the gguf Python package (fixtures from tools/make_quant_fixtures.py):
// dequantize is bit-exact on gguf's bytes, quantize reproduces gguf's bytes where gguf has
// the reference quantizer, round trips stay within per-type error bounds, and dot_row
// matches a double-precision reference and its own documented reduction order exactly.
#include <gtest/gtest.h>

#include "quant/quant_test_util.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "quant/dot.hpp"
#include "quant/quantize.hpp"
#include "../test_paths.hpp"

namespace brisk {
namespace {

const DType kAll[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                      DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

struct Fixture {
  DType type;
  uint32_t rows = 0, n = 0;
  std::vector<float> src;  // empty where gguf has no quantizer for the type
  std::vector<uint8_t> q;
  std::vector<float> deq;
  uint64_t row_bytes() const { return *dtype_bytes(type, n); }
};

Fixture load_fixture(DType type) {
  const std::string path = test::golden_dir() + "/quant/" + dtype_name(type) + ".bin";
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("missing fixture " + path + ": run tools/make_quant_fixtures.py");
  char magic[4];
  uint32_t head[4];
  f.read(magic, 4);
  f.read(reinterpret_cast<char*>(head), sizeof(head));
  if (std::memcmp(magic, "BQF1", 4) != 0 || head[0] != uint32_t(type))
    throw std::runtime_error("bad fixture " + path);
  Fixture fx{type, head[1], head[2], {}, {}, {}};
  const size_t elems = size_t(fx.rows) * fx.n;
  if (head[3]) {
    fx.src.resize(elems);
    f.read(reinterpret_cast<char*>(fx.src.data()), std::streamsize(elems * 4));
  }
  fx.q.resize(fx.rows * fx.row_bytes());
  f.read(reinterpret_cast<char*>(fx.q.data()), std::streamsize(fx.q.size()));
  fx.deq.resize(elems);
  f.read(reinterpret_cast<char*>(fx.deq.data()), std::streamsize(elems * 4));
  if (!f || f.peek() != EOF) throw std::runtime_error("truncated or oversized fixture " + path);
  return fx;
}

const DType kFixtureTypes[] = {DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                               DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

// Bitwise float comparison that also treats any NaN as equal to any NaN.
bool same_float(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, 4) == 0;
}

TEST(QuantFixtures, DequantizeIsBitExactWithGguf) {
  for (DType type : kFixtureTypes) {
    const Fixture fx = load_fixture(type);
    std::vector<float> out(fx.n);
    for (uint32_t r = 0; r < fx.rows; ++r) {
      dequantize_row(type, fx.q.data() + r * fx.row_bytes(), out.data(), fx.n);
      for (uint32_t i = 0; i < fx.n; ++i)
        ASSERT_TRUE(same_float(out[i], fx.deq[r * fx.n + i]))
            << dtype_name(type) << " row " << r << " elem " << i << ": " << out[i] << " vs "
            << fx.deq[r * fx.n + i];
    }
  }
}

TEST(QuantFixtures, QuantizeIsBitExactWithGguf) {
  int checked = 0;
  for (DType type : kFixtureTypes) {
    const Fixture fx = load_fixture(type);
    if (fx.src.empty()) continue;  // K-quants: gguf has no quantizer; see RoundTripError
    std::vector<uint8_t> out(fx.row_bytes());
    for (uint32_t r = 0; r < fx.rows; ++r) {
      quantize_row(type, fx.src.data() + r * fx.n, out.data(), fx.n);
      const uint8_t* want = fx.q.data() + r * fx.row_bytes();
      for (size_t b = 0; b < out.size(); ++b)
        ASSERT_EQ(int(out[b]), int(want[b])) << dtype_name(type) << " row " << r << " byte " << b;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5 * 4);
}

std::vector<float> dequantized(DType type, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  dequantize_row(type, q.data(), y.data(), int64_t(n));
  return y;
}

// RMS(dequantize(quantize(x)) - x) / RMS(x) for Gaussian rows; bounds are ~1.25x what this
// implementation measures (so a regression in a quantizer's search shows up).
TEST(QuantRoundTrip, RelativeRmsErrorWithinBound) {
  struct Bound { DType type; double max_rel_rms; };
  // measured: F16 2.1e-4, BF16 1.7e-3, Q8_0 .0053, Q4_0 .085, Q5_0 .043, Q4_K .071,
  // Q5_K .036, Q6_K .018
  const Bound bounds[] = {{DType::F32, 0.0},     {DType::F16, 2.6e-4},  {DType::BF16, 2.1e-3},
                          {DType::Q8_0, 0.0067}, {DType::Q4_0, 0.107},  {DType::Q5_0, 0.054},
                          {DType::Q4_K, 0.089},  {DType::Q5_K, 0.045},  {DType::Q6_K, 0.022}};
  const size_t n = 16384;
  for (const Bound& b : bounds) {
    const auto x = gaussian(n, 99);
    const auto y = dequantized(b.type, quantized(b.type, x), n);
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; ++i) {
      err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      ref += double(x[i]) * x[i];
    }
    const double rel = std::sqrt(err / ref);
    EXPECT_LE(rel, b.max_rel_rms) << dtype_name(b.type);
    RecordProperty(std::string("rel_rms_") + dtype_name(b.type), std::to_string(rel));
    std::printf("  %-5s relative RMS error %.5f\n", dtype_name(b.type), rel);
  }
}

// Re-quantizing what a quantizer decoded must not lose more: for the K-quants (whose
// quantizer gguf lacks) the second round trip's error against the first decode is small.
TEST(QuantRoundTrip, KQuantsAreNearlyIdempotent) {
  for (DType type : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const auto x = gaussian(4096, 5);
    const auto y1 = dequantized(type, quantized(type, x), x.size());
    const auto y2 = dequantized(type, quantized(type, y1), x.size());
    double err = 0, ref = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (double(y2[i]) - y1[i]) * (double(y2[i]) - y1[i]);
      ref += double(y1[i]) * y1[i];
    }
    EXPECT_LE(std::sqrt(err / ref), 0.02) << dtype_name(type);
  }
}

TEST(QuantRoundTrip, ZerosAndConstantsAreExact) {
  for (DType type : kAll) {
    const int64_t n = 512;
    std::vector<float> zeros(n, 0.0f);
    for (float v : dequantized(type, quantized(type, zeros), n)) ASSERT_EQ(v, 0.0f) << dtype_name(type);
    // A constant block: exact where the scale is a power of two (Q4_0: 0.5/8, Q5_0: 0.5/16),
    // else off by the f16 rounding of the scale (Q8_0: 0.5/127; K-quants: the min, 0.5/63).
    const bool exact = type != DType::Q8_0 && dtype_traits(type).block_elems != 256;
    std::vector<float> c(n, -0.5f);
    for (float v : dequantized(type, quantized(type, c), n)) {
      if (exact)
        ASSERT_EQ(v, -0.5f) << dtype_name(type);
      else
        ASSERT_NEAR(v, -0.5f, 0.5f * 0x1p-10f) << dtype_name(type);
    }
  }
}

int64_t block_of(DType t) { return dtype_traits(t).block_elems; }

// The documented order of quant/dot.hpp, computed here from dequantize_row with std::fma.
float dot_in_documented_order(DType type, const void* w, const float* x, int64_t n) {
  std::vector<float> wf(static_cast<size_t>(n));
  dequantize_row(type, w, wf.data(), n);
  float a[32] = {};
  for (int64_t i = 0; i < n; ++i) a[i % 32] = std::fma(wf[i], x[i], a[i % 32]);
  float s[8], t[4], u[2];
  for (int l = 0; l < 8; ++l) s[l] = (a[l] + a[8 + l]) + (a[16 + l] + a[24 + l]);
  for (int l = 0; l < 4; ++l) t[l] = s[l] + s[l + 4];
  for (int l = 0; l < 2; ++l) u[l] = t[l] + t[l + 2];
  return u[0] + u[1];
}

std::vector<int64_t> dot_lengths(DType type) {
  if (block_of(type) == 256) return {256, 512, 2816, 4096};
  if (block_of(type) == 32) return {32, 96, 256, 512, 2816, 2848};
  return {1, 7, 31, 32, 33, 100, 256, 2051, 2816};
}

// |dot_row - sum dequantize(w)_i x_i (double)| <= 1e-5 * sum |w_i x_i|: float32 lanes of
// about n/32 terms each have error ~ (n/32 + 5) * 2^-24 of that sum; 1e-5 covers n ~ 5000.
TEST(QuantDot, MatchesDoubleReference) {
  for (DType type : kAll) {
    for (int64_t n : dot_lengths(type)) {
      const auto wsrc = gaussian(size_t(n), 1000 + uint32_t(n));
      const auto x = gaussian(size_t(n), 2000 + uint32_t(n), 0.7f);
      const auto q = quantized(type, wsrc);
      const auto w = dequantized(type, q, size_t(n));
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        ref += double(w[i]) * x[i];
        mag += std::fabs(double(w[i]) * x[i]);
      }
      const float got = dot_row(type, q.data(), x.data(), n);
      EXPECT_LE(std::fabs(got - ref), 1e-5 * mag) << dtype_name(type) << " n=" << n;
    }
  }
}

// On every kernel level this machine can be forced to: the exact mode's bits never depend on the CPU.
TEST(QuantDot, FollowsTheDocumentedOrderBitForBit) {
  for_each_cpu_isa([](quant::CpuIsa isa) {
    for (DType type : kAll) {
      for (int64_t n : dot_lengths(type)) {
        const auto q = quantized(type, gaussian(size_t(n), 3000 + uint32_t(n)));
        const auto x = gaussian(size_t(n), 4000 + uint32_t(n));
        const float want = dot_in_documented_order(type, q.data(), x.data(), n);
        EXPECT_TRUE(same_float(dot_row(type, q.data(), x.data(), n), want))
            << quant::cpu_isa_name(isa) << " " << dtype_name(type) << " n=" << n;
        EXPECT_TRUE(same_float(quant::dot_row_scalar(type, q.data(), x.data(), n), want))
            << dtype_name(type) << " n=" << n;
      }
    }
  });
}

// axpy fuses each element on every level (the portable loop's bits), tails included.
TEST(QuantAxpy, IsTheSameBitsOnEveryLevel) {
  for (int64_t n : {1, 7, 16, 17, 255, 256, 300}) {
    const auto x = gaussian(size_t(n), 50), y0 = gaussian(size_t(n), 51);
    std::vector<float> want = y0;
    for (int64_t i = 0; i < n; ++i) want[size_t(i)] = std::fma(0.37f, x[size_t(i)], want[size_t(i)]);
    for_each_cpu_isa([&](quant::CpuIsa isa) {
      std::vector<float> y = y0;
      axpy(0.37f, x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(same_float(y[size_t(i)], want[size_t(i)])) << quant::cpu_isa_name(isa) << " n=" << n << " i=" << i;
    });
  }
}

// gguf's own bytes (random K-quant blocks with every scale/min/high-bit pattern) too.
TEST(QuantDot, FixtureRowsFollowTheDocumentedOrder) {
  for (DType type : kFixtureTypes) {
    const Fixture fx = load_fixture(type);
    const auto x = gaussian(fx.n, 77);
    for (uint32_t r = 0; r < fx.rows; ++r) {
      const uint8_t* w = fx.q.data() + r * fx.row_bytes();
      EXPECT_TRUE(same_float(dot_row(type, w, x.data(), fx.n),
                             dot_in_documented_order(type, w, x.data(), fx.n)))
          << dtype_name(type) << " row " << r;
    }
  }
}

TEST(QuantDot, IsDeterministicAcrossCallsAndThreads) {
  for (DType type : kAll) {
    const int64_t n = 2816;
    const auto q = quantized(type, gaussian(size_t(n), 5));
    const auto x = gaussian(size_t(n), 6);
    const float first = dot_row(type, q.data(), x.data(), n);
    for (int rep = 0; rep < 20; ++rep) ASSERT_TRUE(same_float(dot_row(type, q.data(), x.data(), n), first));
    float other = 0;
    std::thread t([&] { other = dot_row(type, q.data(), x.data(), n); });
    t.join();
    EXPECT_TRUE(same_float(other, first)) << dtype_name(type);
  }
}

TEST(QuantDot, AcceptsUnalignedRowsAndActivations) {
  for (DType type : kAll) {
    const int64_t n = 512;
    const auto q = quantized(type, gaussian(size_t(n), 8));
    const auto x = gaussian(size_t(n), 9);
    const float want = dot_row(type, q.data(), x.data(), n);
    std::vector<uint8_t> qbuf(q.size() + 1);
    std::memcpy(qbuf.data() + 1, q.data(), q.size());
    std::vector<float> xbuf(size_t(n) + 1);
    std::memcpy(xbuf.data() + 1, x.data(), size_t(n) * 4);
    EXPECT_TRUE(same_float(dot_row(type, qbuf.data() + 1, xbuf.data() + 1, n), want)) << dtype_name(type);
    std::vector<float> y(static_cast<size_t>(n)), y1(static_cast<size_t>(n));
    dequantize_row(type, q.data(), y.data(), n);
    dequantize_row(type, qbuf.data() + 1, y1.data(), n);
    EXPECT_EQ(std::memcmp(y.data(), y1.data(), y.size() * 4), 0) << dtype_name(type);
  }
}

TEST(QuantApi, RejectsPartialBlocks) {
  std::vector<uint8_t> buf(1024);
  std::vector<float> f(512);
  EXPECT_THROW(dequantize_row(DType::Q4_K, buf.data(), f.data(), 100), Error);
  EXPECT_THROW(quantize_row(DType::Q8_0, f.data(), buf.data(), 33), Error);
  EXPECT_THROW(dot_row(DType::Q5_0, buf.data(), f.data(), 48), Error);
  EXPECT_EQ(dot_row(DType::Q6_K, buf.data(), f.data(), 0), 0.0f);
}

}  // namespace
}  // namespace brisk
