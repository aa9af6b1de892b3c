// The CUDA norm, activation, add and rope ops, and the fused rope + KV-cache writes, against
// the CPU oracle.
// Tolerances and helpers: cuda_ops_util.hpp. Without a GPU (CI) the tests skip.
#include "backend/cuda_ops_util.hpp"

#if BRISK_WITH_CUDA
namespace brisk {
namespace {
using namespace brisk::test;

TEST_F(CudaOps, RmsnormActAdd) {
  for (int64_t dim : {7, 128, 640, 3584}) {
    for (int64_t rows : {1, 3, 130}) {
      auto x = gaussian(size_t(rows * dim), uint32_t(dim + rows));
      auto wv = gaussian(size_t(dim), 3);
      WeightView view{"n", DType::F32, 1, dim, wv.data()};
      DeviceWeight gw = gpu_->upload(view), cw = cpu_->upload(view);
      float* gx = dev(*gpu_, x);
      float* cx = dev(*cpu_, x);
      float* go = poisoned(*gpu_, x.size());
      float* co = poisoned(*cpu_, x.size());
      gpu_->rmsnorm(gx, rows, gw, 1e-6f, go);
      cpu_->rmsnorm(cx, rows, cw, 1e-6f, co);
      EXPECT_LT(rel_err(host(*gpu_, go, x.size()), host(*cpu_, co, x.size())), 1e-5) << dim << " " << rows;
      gpu_->rmsnorm(gx, rows, gw, 1e-6f, gx);  // in place, as the qk-norm runs
      EXPECT_LT(rel_err(host(*gpu_, gx, x.size()), host(*cpu_, co, x.size())), 1e-5) << "in place " << dim;
    }
  }
  for (Activation act : {Activation::SiLU, Activation::GeluTanh}) {
    const size_t n = 10007;
    auto g = gaussian(n, 5, 3.f), u = gaussian(n, 6);
    float* go = poisoned(*gpu_, n);
    float* co = poisoned(*cpu_, n);
    gpu_->act_mul(dev(*gpu_, g), dev(*gpu_, u), int64_t(n), act, go);
    cpu_->act_mul(dev(*cpu_, g), dev(*cpu_, u), int64_t(n), act, co);
    EXPECT_LT(rel_err(host(*gpu_, go, n), host(*cpu_, co, n)), 1e-6);
    float* ga = dev(*gpu_, g);
    float* ca = dev(*cpu_, g);
    gpu_->add(ga, dev(*gpu_, u), int64_t(n));
    cpu_->add(ca, dev(*cpu_, u), int64_t(n));
    EXPECT_EQ(host(*gpu_, ga, n), host(*cpu_, ca, n));
  }
}

TEST_F(CudaOps, RopeBothPairingsAndScalings) {
  std::vector<float> factors(64, 1.f);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.f + float(i % 5);
  for (int hd : {64, 128, 256}) {
    for (RopeStyle style : {RopeStyle::Half, RopeStyle::Interleaved}) {
      for (int variant = 0; variant < 3; ++variant) {
        RopeConfig cfg;
        cfg.head_dim = hd;
        cfg.style = style;
        cfg.theta = variant == 0 ? 10000.f : 1000000.f;
        if (variant == 1) cfg.llama3_factor = 8.f, cfg.llama3_original_context = 8192;
        if (variant == 2) cfg.linear_factor = 8.f, cfg.freq_factors = hd / 2 <= 64 ? factors.data() : nullptr;
        const int64_t n = 37;
        const int heads = 5;
        std::vector<int32_t> pos(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t((i * 977) % 30000);
        auto x = gaussian(size_t(n * heads * hd), uint32_t(hd + variant));
        float* gx = dev(*gpu_, x);
        float* cx = dev(*cpu_, x);
        gpu_->rope(gx, n, heads, dev_ids(*gpu_, pos), cfg);
        cpu_->rope(cx, n, heads, dev_ids(*cpu_, pos), cfg);
        // sincosf vs std::sin/cos at angles up to 3e4 rad: a few ulps of the angle.
        EXPECT_LT(rel_err(host(*gpu_, gx, x.size()), host(*cpu_, cx, x.size())), 2e-5) << hd << " " << variant;
      }
    }
  }
}

TEST_F(CudaOps, FusedRopeAndKvWrite) {
  for (int hd : {64, 128}) {
    const RopeConfig cfg = rope_1e6(hd);
    const int64_t n = 19, cap = 40;
    const int heads = 7, kvh = 3;
    std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t((i * 7) % cap), seq[size_t(i)] = int32_t(i % 2);
    auto q = gaussian(size_t(n * heads * hd), 1), k = gaussian(size_t(n * kvh * hd), 2), v = gaussian(size_t(n * kvh * hd), 3);
    std::vector<std::vector<float>> out[3];  // the fast GPU (bf16 cache), the exact GPU, the CPU
    int i = 0;
    for (Backend* b : {gpu_.get(), exact_.get(), cpu_.get()}) {
      KvCache kv = zeroed_kv(*b, kvh, hd, cap);
      const size_t elems = size_t(kv.layer_stride() * 2);
      float *bq = dev(*b, q), *bk = dev(*b, k), *bv = dev(*b, v);
      b->rope_kv_write(bq, bk, bv, n, heads, dev_ids(*b, pos), dev_ids(*b, seq), cfg, kv, 1);
      out[i].push_back(host(*b, bq, q.size()));
      out[i].push_back(host(*b, bk, k.size()));
      out[i].push_back(kv_host(*b, kv, kv.k, elems));
      out[i].push_back(kv_host(*b, kv, kv.v, elems));
      b->release_kv(kv);
      ++i;
    }
    for (size_t j = 0; j < 4; ++j)
      EXPECT_LT(rel_err(out[1][j], out[2][j]), 2e-5) << "exact, hd " << hd << " output " << j;
    for (size_t j = 0; j < 2; ++j) EXPECT_LT(rel_err(out[0][j], out[2][j]), 2e-5) << "fast, hd " << hd << " output " << j;
    EXPECT_LT(rel_err(out[0][2], bf16_rounded(out[2][2])), 3e-3) << "fast, hd " << hd << ": rotated keys in the cache";
    EXPECT_EQ(out[0][3], bf16_rounded(out[2][3])) << "fast, hd " << hd << ": values in the cache";
  }
}

// q/k/v products, rope and the KV write as one op: on the GPU with the matrices end to end,
// one product whose split (and biases) the rope pass folds in; against the oracle's separate
// ops, fed x as the product rounds it.
TEST_F(CudaOps, FusedProjectionRopeAndKvWrite) {
  uint32_t seed = 500;
  for (int hd : {64, 128}) {
    const RopeConfig cfg = rope_1e6(hd);
    const int heads = 7, kvh = 3;
    const int64_t cols = 256, cap = 120;
    const int64_t rows[3] = {heads * hd, kvh * hd, kvh * hd};
    std::vector<Weight> w;
    std::vector<std::vector<float>> bias;
    for (int i = 0; i < 3; ++i)
      w.push_back(make_weight(DType::BF16, rows[i], cols, seed++)), bias.push_back(gaussian(size_t(rows[i]), seed++));
    for (int64_t n : {1, 5, 64, 100}) {
      std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t((i * 7) % cap), seq[size_t(i)] = int32_t(i % 2);
      const auto x = gaussian(size_t(n * cols), seed++);
      std::vector<std::vector<float>> out[2];
      int i = 0;
      for (Backend* b : {gpu_.get(), cpu_.get()}) {
        KvCache kv = zeroed_kv(*b, kvh, hd, cap);
        const size_t elems = size_t(kv.layer_stride() * 2);
        DeviceWeight dw[3], db[3];
        const DeviceWeight* wp[3];
        const DeviceWeight* bp[3];
        const WeightView* views[3] = {&w[0].view, &w[1].view, &w[2].view};
        b->upload_adjacent(views, 3, dw);
        float* qkv[3];
        for (int j = 0; j < 3; ++j) {
          db[j] = b->upload(WeightView{"b", DType::F32, 1, rows[j], bias[size_t(j)].data()});
          wp[j] = &dw[j], bp[j] = j == 1 ? nullptr : &db[j];
          qkv[j] = poisoned(*b, size_t(n * rows[j]));
        }
        float* bx = dev(*b, b == gpu_.get() ? x : fast_input(x, DType::BF16, n, cols));
        b->qkv_rope_kv_write(bx, n, wp, bp, qkv, heads, dev_ids(*b, pos), dev_ids(*b, seq), cfg, kv, 1);
        out[i].push_back(host(*b, qkv[0], size_t(n * rows[0])));
        out[i].push_back(host(*b, qkv[1], size_t(n * rows[1])));
        out[i].push_back(kv_host(*b, kv, kv.k, elems));
        out[i].push_back(kv_host(*b, kv, kv.v, elems));
        b->release_kv(kv);
        ++i;
      }
      // The product's tolerance, and for the bf16 cache its rounding on top.
      const double tol = matmul_tolerance(DType::BF16, n, cols, false);
      for (size_t j = 0; j < 4; ++j)
        EXPECT_LT(rel_err(out[0][j], j < 2 ? out[1][j] : bf16_rounded(out[1][j])), j < 2 ? tol : tol + 4e-3)
            << "hd " << hd << " n " << n << " output " << j;
      TearDown();
      owned_.clear();
    }
  }
}

}  // namespace
}  // namespace brisk
#endif  // BRISK_WITH_CUDA
