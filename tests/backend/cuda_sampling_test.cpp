// The CUDA sampler and the logit edits against the CPU oracle.
// Tolerances and helpers: cuda_ops_util.hpp. Without a GPU (CI) the tests skip.
#include "backend/cuda_ops_util.hpp"

#include <random>

#if BRISK_WITH_CUDA
namespace brisk {
namespace {
using namespace brisk::test;

TEST_F(CudaOps, SamplingMatchesTheReference) {
  const int64_t vocab = 152064, rows = 96;
  auto logits = gaussian(size_t(vocab * rows), 99, 2.f);
  std::vector<RowSampling> params(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    RowSampling& p = params[size_t(r)];
    p.temperature = r % 4 == 0 ? 0.f : 0.3f + 0.1f * float(r % 7);
    p.top_k = r % 3 == 0 ? 0 : int32_t(1 + r * 13 % 200);
    p.top_p = r % 5 == 0 ? 1.f : 0.5f + 0.05f * float(r % 9);
    p.min_p = r % 2 == 0 ? 0.f : 0.05f;
    p.seed = uint64_t(r) * 7919;
    p.step = uint64_t(r % 11);
  }
  auto run = [&](Backend& b) {
    float* l = dev(b, logits);
    auto* pp = static_cast<RowSampling*>(b.alloc_bytes(params.size() * sizeof(RowSampling)));
    b.copy_from_host(params.data(), pp, params.size() * sizeof(RowSampling));
    int32_t* ids = dev_ids(b, std::vector<int32_t>(static_cast<size_t>(rows), -1));
    b.sample(l, rows, vocab, vocab, pp, ids);
    std::vector<int32_t> out(static_cast<size_t>(rows));
    b.copy_to_host(ids, out.data(), out.size() * 4);
    b.release_bytes(pp);
    return out;
  };
  auto cpu = run(*cpu_), gpu = run(*gpu_), again = run(*gpu_);
  EXPECT_EQ(gpu, again) << "the GPU draw must be deterministic";
  int same = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (params[size_t(r)].temperature == 0.f) {
      EXPECT_EQ(gpu[size_t(r)], cpu[size_t(r)]) << "greedy row " << r;
    }
    same += gpu[size_t(r)] == cpu[size_t(r)];
    EXPECT_GE(gpu[size_t(r)], 0);
    EXPECT_LT(gpu[size_t(r)], vocab);
  }
  EXPECT_GE(same, int(rows * 98 / 100));
}

// Logits processors' edits give the oracle's bits (one division or multiplication and one
// subtraction per entry, IEEE-rounded on both); a ban is -inf; sampling over a row stride
// wider than the vocabulary never draws the padding, which holds the row's largest logits.
TEST_F(CudaOps, LogitEditsAndPaddedRowsMatchTheOracle) {
  const int64_t vocab = 1000, stride = 1024, rows = 6;
  auto logits = gaussian(size_t(stride * rows), 17, 3.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = vocab; i < stride; ++i) logits[size_t(r * stride + i)] = 100.f;  // padding ids: never drawn
  std::vector<LogitEdit> edits;
  for (int64_t r = 0; r < rows; ++r)
    for (int32_t id = int32_t(r); id < vocab; id += 7)
      edits.push_back({int32_t(r), id, 1.f + 0.05f * float(id % 5), id % 3 == 0 ? INFINITY : 0.25f * float(id % 4 - 1)});
  std::vector<RowSampling> params(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) params[size_t(r)] = RowSampling{r % 2 ? 0.9f : 0.f, 0.95f, 0.f, 0, uint64_t(r), 3};
  auto run = [&](Backend& b, std::vector<float>* edited) {
    float* l = dev(b, logits);
    auto* e = static_cast<LogitEdit*>(b.alloc_bytes(edits.size() * sizeof(LogitEdit)));
    b.copy_from_host(edits.data(), e, edits.size() * sizeof(LogitEdit));
    auto* pp = static_cast<RowSampling*>(b.alloc_bytes(params.size() * sizeof(RowSampling)));
    b.copy_from_host(params.data(), pp, params.size() * sizeof(RowSampling));
    int32_t* ids = dev_ids(b, std::vector<int32_t>(static_cast<size_t>(rows), -1));
    b.edit_logits(l, stride, e, int64_t(edits.size()));
    b.sample(l, rows, stride, vocab, pp, ids);
    *edited = host(b, l, logits.size());
    std::vector<int32_t> out(static_cast<size_t>(rows));
    b.copy_to_host(ids, out.data(), out.size() * 4);
    b.release_bytes(pp);
    b.release_bytes(e);
    return out;
  };
  std::vector<float> cpu_l, gpu_l;
  const auto cpu = run(*cpu_, &cpu_l), gpu = run(*gpu_, &gpu_l);
  EXPECT_EQ(0, std::memcmp(cpu_l.data(), gpu_l.data(), cpu_l.size() * 4)) << "edited logits differ";
  EXPECT_EQ(cpu_l[size_t(0)], -INFINITY);  // row 0, id 0: banned (0 % 3 == 0)
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_LT(gpu[size_t(r)], vocab) << "row " << r << " drew a padding id";
    if (r % 2 == 0) {
      EXPECT_EQ(gpu[size_t(r)], cpu[size_t(r)]) << "greedy row " << r;
    }
  }
}

// Grammar masks on rows of a padded vocabulary (a ragged last word; masks for some rows
// only, in any order): the same -inf pattern as the oracle's, and nothing else touched.
TEST_F(CudaOps, GrammarMasksMatchTheOracle) {
  const int64_t vocab = 1000, stride = 1024, rows = 5, words = (vocab + 63) / 64;
  const auto logits = gaussian(size_t(stride * rows), 23, 2.f);
  std::mt19937_64 rng(5);
  std::vector<uint64_t> bits(size_t(3 * words));
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = i % 5 == 0 ? ~0ull : i % 7 == 0 ? 0 : rng();
  const std::vector<int32_t> mask_rows = {4, 0, 2};
  std::vector<float> out[2];
  for (int k = 0; k < 2; ++k) {
    Backend& b = k ? *gpu_ : *cpu_;
    float* l = dev(b, logits);
    b.mask_logits(l, stride, vocab, bits.data(), mask_rows.data(), 3);
    out[k] = host(b, l, logits.size());
  }
  EXPECT_EQ(0, std::memcmp(out[0].data(), out[1].data(), out[0].size() * 4));
  size_t masked = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < stride; ++t) {
      const float v = out[1][size_t(r * stride + t)];
      int mi = -1;
      for (int i = 0; i < 3; ++i) mi = mask_rows[size_t(i)] == r ? i : mi;
      const bool keep = mi < 0 || t >= vocab || ((bits[size_t(mi * words + (t >> 6))] >> (t & 63)) & 1);
      if (keep) {
        EXPECT_EQ(v, logits[size_t(r * stride + t)]) << r << " " << t;
      } else {
        EXPECT_EQ(v, -INFINITY) << r << " " << t;
        ++masked;
      }
    }
  EXPECT_GT(masked, 1000u);
}

}  // namespace
}  // namespace brisk
#endif  // BRISK_WITH_CUDA
