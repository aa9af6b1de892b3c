// Grammar masks on logits: the CPU backend's own mask_logits and the Backend default (each
// row through the host, which backends without a kernel use) give the same rows; allowed
// tokens and padded columns past the vocabulary are untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"

namespace brisk {
namespace {

TEST(CpuLogits, MasksMatchTheDefaultAndTheBits) {
  const int64_t vocab = 300, stride = 320, rows = 4, words = (vocab + 63) / 64;
  std::mt19937_64 rng(9);
  std::vector<float> logits(size_t(stride * rows));
  for (float& v : logits) v = float(rng() % 1000) / 100.f;
  std::vector<uint64_t> bits(size_t(2 * words));
  for (uint64_t& w : bits) w = rng();
  const std::vector<int32_t> mask_rows = {3, 1};
  auto be = make_cpu_backend(1, false);
  std::vector<float> out[2];
  for (int k = 0; k < 2; ++k) {
    auto* l = static_cast<float*>(be->alloc_bytes(logits.size() * 4));
    be->copy_from_host(logits.data(), l, logits.size() * 4);
    if (k == 0) be->mask_logits(l, stride, vocab, bits.data(), mask_rows.data(), 2);
    else be->Backend::mask_logits(l, stride, vocab, bits.data(), mask_rows.data(), 2);
    out[k].resize(logits.size());
    be->to_host(l, out[k].data(), int64_t(logits.size()));
    be->release_bytes(l);
  }
  EXPECT_EQ(out[0], out[1]);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < stride; ++t) {
      const int mi = r == 3 ? 0 : r == 1 ? 1 : -1;
      const bool keep = mi < 0 || t >= vocab || ((bits[size_t(mi * words + (t >> 6))] >> (t & 63)) & 1);
      EXPECT_EQ(out[0][size_t(r * stride + t)], keep ? logits[size_t(r * stride + t)] : -INFINITY) << r << " " << t;
    }
}

}  // namespace
}  // namespace brisk
