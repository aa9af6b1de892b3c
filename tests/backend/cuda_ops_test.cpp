// Every CUDA op against the CPU oracle (as llama.cpp's test-backend-ops): random inputs of
// many shapes, including sizes that are not multiples of any tile, outputs poisoned with NaN
// before each run so an unwritten element fails. Tolerances, as ||gpu - cpu|| / ||cpu||:
//   GEMV, float products (decode, <= 8 tokens):           3e-5 (a single row's dot: 1.03e-5 seen)
//   GEMV, int8 activations (Q8_0, I8, K-quants):          1e-4 against the oracle fed x as the kernel
//     rounds it (int8 per block of 32, q8_rounded); x itself is ~0.5% away (the model tests
//     bound that: fast-mode logits within 3e-2)
//   GEMM (prefill, bf16 operands on the tensor cores):    2e-2 (f16 weights 4e-3); exact mode 1e-5
//   (16-bit weights take the tensor cores from 2 tokens: the GEMM tolerance)
//   norm, rope, act, add, embed, KV write:                1e-5
//   KV cache: float32 in exact mode, byte for byte; bf16 in fast mode, each element the
//     oracle's value rounded to nearest even (3e-3 after a rope, whose sincosf may move a
//     value across a rounding boundary)
//   attention: exact mode (float32 cache, float32 split kernel) 1e-5; fast mode (bf16 cache
//   and tensor cores: flash attention 2 for prefill, the tensor-core split kernel for
//   decode on sm_80+, the float kernel over the bf16 cache for groups over 16) 2e-2
//   sampling: greedy identical; sampled ids identical on >= 98% of rows (fixed-point sums;
//   expf rounding may move a draw that falls within a unit of a boundary)
// Without a GPU (CI) the tests skip: scripts/gpu-check runs them on one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "backend/backend.hpp"
#include "backend/row_sampling.hpp"
#include "base/error.hpp"
#include "base/half.hpp"
#include "quant/dtype.hpp"
#include "quant/quantize.hpp"

#if BRISK_WITH_CUDA
#include "backend/cuda/cuda_backend.hpp"

namespace brisk {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float sigma = 1.f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device (scripts/gpu-check runs these on a GPU)";
    gpu_ = make_cuda_backend(0);
    exact_ = make_cuda_backend(0, CudaOptions{true});
    cpu_ = make_cpu_backend(1, false);
  }

  // A device buffer holding host values; poisoned when `poison`.
  float* dev(Backend& b, const std::vector<float>& host) {
    float* p = b.alloc(int64_t(host.size()));
    b.from_host(host.data(), p, int64_t(host.size()));
    owned_.push_back({&b, p});
    return p;
  }
  float* poisoned(Backend& b, size_t n) { return dev(b, std::vector<float>(n, NAN)); }
  int32_t* dev_ids(Backend& b, const std::vector<int32_t>& host) {
    auto* p = static_cast<int32_t*>(b.alloc_bytes(host.size() * 4 + 4));
    b.copy_from_host(host.data(), p, host.size() * 4);
    owned_.push_back({&b, p});
    return p;
  }
  std::vector<float> host(Backend& b, const float* p, size_t n) {
    std::vector<float> v(n);
    b.to_host(p, v.data(), int64_t(n));
    return v;
  }
  // n elements of a KV cache array as floats (a bf16 cache widened).
  std::vector<float> kv_host(Backend& b, const KvCache& kv, const void* p, size_t n) {
    if (kv.elem_bytes == 4) return host(b, static_cast<const float*>(p), n);
    std::vector<uint16_t> raw(n);
    b.copy_to_host(p, raw.data(), n * 2);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = bf16_to_f32(raw[i]);
    return v;
  }
  // A cache of 2 layers and 2 sequences, every element zero.
  KvCache zeroed_kv(Backend& b, int kv_heads, int hd, int64_t cap) {
    KvCache kv = b.alloc_kv(2, kv_heads, hd, cap, 2);
    const std::vector<uint8_t> zeros(size_t(kv.layer_stride() * 2) * size_t(kv.elem_bytes), 0);
    b.copy_from_host(zeros.data(), kv.k, zeros.size());
    b.copy_from_host(zeros.data(), kv.v, zeros.size());
    return kv;
  }
  void TearDown() override {
    for (auto& [b, p] : owned_) b->release_bytes(p);
  }

  std::unique_ptr<Backend> gpu_, exact_, cpu_;
  std::vector<std::pair<Backend*, void*>> owned_;
};

RopeConfig rope_1e6(int hd) {
  RopeConfig c;
  c.head_dim = hd;
  c.theta = 1e6f;
  return c;
}

std::vector<float> bf16_rounded(std::vector<float> v) {
  for (float& x : v) x = bf16_to_f32(f32_to_bf16(x));
  return v;
}

struct Weight {
  std::vector<uint8_t> bytes;
  std::vector<float> scales;  // I8
  WeightView view;
};

Weight make_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  Weight w;
  const uint64_t rb = *dtype_bytes(t, uint64_t(cols));
  w.bytes.resize(rb * uint64_t(rows));
  auto x = randn(size_t(rows * cols), seed, 0.5f);
  if (t == DType::I8) w.scales.resize(size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (t == DType::I8)
      w.scales[size_t(r)] = quantize_row_i8(x.data() + r * cols, reinterpret_cast<int8_t*>(w.bytes.data() + r * rb), cols);
    else
      quantize_row(t, x.data() + r * cols, w.bytes.data() + r * rb, cols);
  }
  w.view = WeightView{"w", t, rows, cols, w.bytes.data(), t == DType::I8 ? w.scales.data() : nullptr};
  return w;
}

// Whether the fast backend takes this product with int8 activations (CudaBackend::quantized_input).
bool int8_path(DType t, int64_t n, int64_t cols) {
  const bool int8_dot = t == DType::Q8_0 || t == DType::I8 || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
  return int8_dot && n <= 8 && cols % 32 == 0;
}

// The tolerance of a product of n tokens against the oracle: it follows the backend's choice
// of path (CudaBackend::use_gemv and quantized_input).
double matmul_tolerance(DType t, int64_t n, int64_t cols, bool exact) {
  if (exact) return 3e-5;
  const bool sixteen = t == DType::BF16 || t == DType::F16;
  if (n > 8 || (sixteen && n > 1)) return t == DType::F16 ? 4e-3 : 2e-2;
  return int8_path(t, n, cols) ? 1e-4 : 3e-5;
}

// x as the integer GEMV sees it: int8 per block of 32 with scale max|x| / 127, rounded to
// nearest even (quantize_q8_kernel's arithmetic), as floats.
std::vector<float> q8_rounded(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b + 32 <= x.size(); b += 32) {
    float amax = 0.f;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    const float scale = amax / 127.f, inv = amax > 0.f ? 127.f / amax : 0.f;
    for (size_t j = 0; j < 32; ++j) {
      const int q = amax > 0.f ? std::clamp(int(std::nearbyint(x[b + j] * inv)), -127, 127) : 0;
      out[b + j] = float(q) * scale;
    }
  }
  return out;
}

// What the fast backend's product of n tokens should be compared with: x, or x rounded.
std::vector<float> fast_input(const std::vector<float>& x, DType t, int64_t n, int64_t cols) {
  return int8_path(t, n, cols) ? q8_rounded(x) : x;
}

const DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::I8,
                        DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

TEST_F(CudaOps, MatmulEveryFormatAndShape) {
  uint32_t seed = 1;
  for (DType t : kTypes) {
    const bool k = dtype_traits(t).block_elems == 256;
    for (int64_t cols : k ? std::vector<int64_t>{256, 768, 3584} : std::vector<int64_t>{96, 352, 1024}) {
      if (t == DType::I8 && cols % 16) continue;
      for (int64_t rows : {1, 7, 33, 257, 1000}) {
        Weight w = make_weight(t, rows, cols, seed++);
        DeviceWeight gw = gpu_->upload(w.view), cw = cpu_->upload(w.view), ew = exact_->upload(w.view);
        auto bias_h = randn(size_t(rows), seed++);
        WeightView bv{"b", DType::F32, 1, rows, bias_h.data()};
        DeviceWeight gb = gpu_->upload(bv), cb = cpu_->upload(bv), eb = exact_->upload(bv);
        for (int64_t n : {1, 2, 5, 8, 9, 17, 64}) {
          for (int mode = 0; mode < 3; ++mode) {  // plain, bias, accumulate
            const bool bias = mode == 1, acc = mode == 2;
            auto x = randn(size_t(n * cols), seed++);
            auto y0 = acc ? randn(size_t(n * rows), seed++) : std::vector<float>(size_t(n * rows), NAN);
            for (Backend* b : {gpu_.get(), exact_.get()}) {
              const bool exact = b == exact_.get();
              // The oracle, fed what this backend's kernel actually multiplies.
              float* cx = dev(*cpu_, exact ? x : fast_input(x, t, n, cols));
              float* cy = dev(*cpu_, acc ? y0 : std::vector<float>(y0.size(), 0.f));
              cpu_->matmul(cx, n, cw, cy, bias ? &cb : nullptr, acc);
              auto ref = host(*cpu_, cy, y0.size());
              float* gx = dev(*b, x);
              float* gy = dev(*b, y0);
              b->matmul(gx, n, exact ? ew : gw, gy, bias ? (exact ? &eb : &gb) : nullptr, acc);
              const double err = rel_err(host(*b, gy, y0.size()), ref);
              const double tol = matmul_tolerance(t, n, cols, exact);
              EXPECT_LT(err, tol) << dtype_name(t) << " " << rows << "x" << cols << " n=" << n << " mode=" << mode
                                  << (exact ? " exact" : "");
            }
            TearDown();
            owned_.clear();
          }
        }
      }
    }
  }
}

// The fused decode paths: q/k/v in one launch (with biases), gate and up with the activation;
// also with the matrices uploaded end to end (upload_adjacent: one product for q/k/v; gate and
// up, here the 2nd and 3rd matrices, end to end too), of odd and even widths.
TEST_F(CudaOps, FusedProjectionsMatchSeparateOnes) {
  uint32_t seed = 300;
  for (DType t : kTypes) {
    for (const int64_t width : {33, 32}) {
      for (const bool adjacent : {false, true}) {
        const int64_t cols = dtype_traits(t).block_elems == 256 ? 512 : 320;
        const int64_t rows[3] = {96, width, width};
        std::vector<Weight> w;
        std::vector<std::vector<float>> bias;
        for (int i = 0; i < 3; ++i) w.push_back(make_weight(t, rows[i], cols, seed++)), bias.push_back(randn(size_t(rows[i]), seed++));
        for (int64_t n : {1, 3, 8, 20, 64, 100}) {
          auto x = randn(size_t(n * cols), seed++);
          std::vector<std::vector<float>> got, ref;
          for (Backend* b : {gpu_.get(), cpu_.get()}) {
            DeviceWeight dw[3], db[3];
            const DeviceWeight* wp[3];
            const DeviceWeight* bp[3];
            float* ys[3];
            const WeightView* views[3] = {&w[0].view, &w[1].view, &w[2].view};
            if (adjacent) b->upload_adjacent(views, 3, dw);
            for (int i = 0; i < 3; ++i) {
              if (!adjacent) dw[i] = b->upload(w[size_t(i)].view);
              db[i] = b->upload(WeightView{"b", DType::F32, 1, rows[i], bias[size_t(i)].data()});
              wp[i] = &dw[i], bp[i] = i == 1 ? nullptr : &db[i];
              ys[i] = poisoned(*b, size_t(n * rows[i]));
            }
            float* bx = dev(*b, b == gpu_.get() ? x : fast_input(x, t, n, cols));  // the oracle sees what the kernel does
            b->matmul_multi(bx, n, wp, ys, bp, 3);
            float* g = poisoned(*b, size_t(n * rows[1]));
            float* scratch = poisoned(*b, size_t(n * rows[1]));
            b->matmul_gated(bx, n, dw[1], dw[2], Activation::SiLU, g, scratch);
            auto& out = b == gpu_.get() ? got : ref;
            for (int i = 0; i < 3; ++i) out.push_back(host(*b, ys[i], size_t(n * rows[i])));
            out.push_back(host(*b, g, size_t(n * rows[1])));
          }
          const double tol = matmul_tolerance(t, n, cols, false);
          for (size_t i = 0; i < got.size(); ++i)
            EXPECT_LT(rel_err(got[i], ref[i]), tol)
                << dtype_name(t) << " n=" << n << " width " << width << (adjacent ? " adjacent" : "") << " output " << i;
          TearDown();
          owned_.clear();
        }
      }
    }
  }
}

TEST_F(CudaOps, EmbedEveryFormat) {
  for (DType t : kTypes) {
    const int64_t cols = dtype_traits(t).block_elems == 256 ? 512 : 160;
    Weight w = make_weight(t, 50, cols, 7);
    DeviceWeight gw = gpu_->upload(w.view), cw = cpu_->upload(w.view);
    std::vector<int32_t> ids = {0, 49, 3, 3, 17};
    float* go = poisoned(*gpu_, ids.size() * size_t(cols));
    float* co = poisoned(*cpu_, ids.size() * size_t(cols));
    gpu_->embed(gw, dev_ids(*gpu_, ids), 5, 1.5f, go);
    cpu_->embed(cw, dev_ids(*cpu_, ids), 5, 1.5f, co);
    EXPECT_LT(rel_err(host(*gpu_, go, 5 * cols), host(*cpu_, co, 5 * cols)), 1e-6) << dtype_name(t);
  }
}

TEST_F(CudaOps, RmsnormActAdd) {
  for (int64_t dim : {7, 128, 640, 3584}) {
    for (int64_t rows : {1, 3, 130}) {
      auto x = randn(size_t(rows * dim), uint32_t(dim + rows));
      auto wv = randn(size_t(dim), 3);
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
    auto g = randn(n, 5, 3.f), u = randn(n, 6);
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
        auto x = randn(size_t(n * heads * hd), uint32_t(hd + variant));
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
    auto q = randn(size_t(n * heads * hd), 1), k = randn(size_t(n * kvh * hd), 2), v = randn(size_t(n * kvh * hd), 3);
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
      w.push_back(make_weight(DType::BF16, rows[i], cols, seed++)), bias.push_back(randn(size_t(rows[i]), seed++));
    for (int64_t n : {1, 5, 64, 100}) {
      std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t((i * 7) % cap), seq[size_t(i)] = int32_t(i % 2);
      const auto x = randn(size_t(n * cols), seed++);
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

struct AttnCase {
  int heads, kv_heads, hd, window, seqs;
  int64_t n, start;  // queries; first position (prefill continues a cache)
};

TEST_F(CudaOps, AttentionDecodeAndPrefill) {
  const AttnCase cases[] = {
      {8, 8, 64, 0, 1, 1, 0},       {28, 4, 128, 0, 1, 1, 700},  {8, 1, 128, 0, 3, 3, 40},
      {16, 8, 256, 5, 2, 2, 33},    {32, 2, 128, 0, 1, 1, 260},  {28, 4, 128, 0, 64, 64, 100},
      {28, 4, 128, 0, 1, 77, 0},    {28, 4, 128, 0, 1, 130, 300}, {8, 2, 64, 16, 1, 100, 9},
      {4, 4, 256, 0, 1, 65, 0},     {16, 8, 256, 512, 1, 200, 400}, {32, 2, 128, 0, 1, 64, 0},
      {40, 2, 64, 0, 2, 2, 50}};  // a group of 20: the float kernel over the fast mode's bf16 cache
  uint32_t seed = 11;
  for (const AttnCase& c : cases) {
    const int64_t cap = c.start + c.n + 3;
    const int layers = 2, layer = 1;
    // A pool with spare blocks, each slot given a scattered set of them (the same on both).
    KvCache gk = gpu_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, 0, 16);
    const int64_t pool = gk.n_blocks + 5;
    gpu_->release_kv(gk);
    gk = gpu_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, pool, 16);
    KvCache ek = exact_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, pool, 16);
    KvCache ck = cpu_->alloc_kv(layers, c.kv_heads, c.hd, cap, c.seqs, pool, 16);
    ASSERT_EQ(gk.elem_bytes, 2);
    ASSERT_EQ(ek.elem_bytes, 4);
    std::vector<int32_t> table(static_cast<size_t>(pool));
    for (int64_t i = 0; i < pool; ++i) table[size_t(i)] = int32_t(i);
    std::shuffle(table.begin(), table.end(), std::mt19937(seed));
    for (int s = 0; s < c.seqs; ++s) {
      const int32_t* row = table.data() + int64_t(s) * gk.blocks_per_seq;
      gpu_->set_kv_blocks(gk, s, row, gk.blocks_per_seq);
      exact_->set_kv_blocks(ek, s, row, ek.blocks_per_seq);
      cpu_->set_kv_blocks(ck, s, row, ck.blocks_per_seq);
    }
    // Fill every sequence's cache up to the positions used, then the queries' own keys.
    const bool prefill = c.seqs == 1 && c.n > 1;
    std::vector<int32_t> pos, seq;
    for (int s = 0; s < c.seqs; ++s)
      for (int64_t p = 0; p < (prefill ? c.start + c.n : c.start + 1 + s); ++p) pos.push_back(int32_t(p)), seq.push_back(s);
    const int64_t m = int64_t(pos.size()), kvd = int64_t(c.kv_heads) * c.hd;
    auto k = randn(size_t(m * kvd), seed++), v = randn(size_t(m * kvd), seed++);
    gpu_->kv_write(gk, layer, dev(*gpu_, k), dev(*gpu_, v), m, dev_ids(*gpu_, pos), dev_ids(*gpu_, seq));
    exact_->kv_write(ek, layer, dev(*exact_, k), dev(*exact_, v), m, dev_ids(*exact_, pos), dev_ids(*exact_, seq));
    cpu_->kv_write(ck, layer, dev(*cpu_, k), dev(*cpu_, v), m, dev_ids(*cpu_, pos), dev_ids(*cpu_, seq));
    // Queries: the last c.n positions of the prefill, or each sequence's last position.
    std::vector<int32_t> qpos, qseq;
    if (prefill) {
      for (int64_t i = 0; i < c.n; ++i) qpos.push_back(int32_t(c.start + i)), qseq.push_back(0);
    } else {
      for (int s = 0; s < c.seqs; ++s) qpos.push_back(int32_t(c.start + s)), qseq.push_back(s);
    }
    const int64_t n = int64_t(qpos.size());
    auto q = randn(size_t(n * c.heads * c.hd), seed++);
    AttentionConfig cfg{c.heads, c.kv_heads, c.hd, 1.f / std::sqrt(float(c.hd)), c.window, prefill};
    const size_t out_n = size_t(n * c.heads * c.hd);
    float* co = poisoned(*cpu_, out_n);
    cpu_->attention(dev(*cpu_, q), ck, layer, n, dev_ids(*cpu_, qpos), dev_ids(*cpu_, qseq), cfg, co);
    auto ref = host(*cpu_, co, out_n);
    float* go = poisoned(*gpu_, out_n);
    const float* dq = dev(*gpu_, q);
    const int32_t *dpos = dev_ids(*gpu_, qpos), *dseq = prefill ? nullptr : dev_ids(*gpu_, qseq);
    gpu_->attention(dq, gk, layer, n, dpos, dseq, cfg, go);
    EXPECT_LT(rel_err(host(*gpu_, go, out_n), ref), 2e-2)
        << "fast " << c.heads << "/" << c.kv_heads << " hd " << c.hd << " window " << c.window << " n " << n;
    // Exact mode: the float32 split kernel over a float32 cache, with the same queries.
    gpu_->synchronize();
    float* eo = poisoned(*exact_, out_n);
    exact_->attention(dq, ek, layer, n, dpos, dseq, cfg, eo);
    EXPECT_LT(rel_err(host(*exact_, eo, out_n), ref), 1e-5)
        << "exact " << c.heads << "/" << c.kv_heads << " hd " << c.hd << " window " << c.window << " n " << n;
    // The KV caches themselves: the exact one byte for byte, the fast one rounded to bf16.
    const size_t kv_n = size_t(gk.layer_stride() * layers);
    const std::vector<float> ckh = host(*cpu_, static_cast<float*>(ck.k), kv_n);
    const std::vector<float> ekh = kv_host(*exact_, ek, ek.k, kv_n), gkh = kv_host(*gpu_, gk, gk.k, kv_n);
    KvPages host_pages = gk.pages(layer);
    host_pages.table = table.data();
    for (int s = 0; s < c.seqs; ++s)
      for (int h = 0; h < c.kv_heads; ++h)
        for (int64_t p = 0; p <= c.start; ++p) {
          const int64_t off = host_pages.row(s, h, p);
          const std::vector<float> want(ckh.begin() + off, ckh.begin() + off + c.hd);
          ASSERT_EQ(0, std::memcmp(ekh.data() + off, want.data(), size_t(c.hd) * 4)) << s << " " << h << " " << p;
          ASSERT_EQ(std::vector<float>(gkh.begin() + off, gkh.begin() + off + c.hd), bf16_rounded(want))
              << s << " " << h << " " << p;
        }
    gpu_->release_kv(gk);
    exact_->release_kv(ek);
    cpu_->release_kv(ck);
  }
}

TEST_F(CudaOps, SamplingMatchesTheReference) {
  const int64_t vocab = 152064, rows = 96;
  auto logits = randn(size_t(vocab * rows), 99, 2.f);
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
  auto logits = randn(size_t(stride * rows), 17, 3.f);
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

TEST_F(CudaOps, CapturedStepReplaysWithNewInputs) {
  const int64_t rows = 300, cols = 512;
  Weight w = make_weight(DType::Q4_K, rows, cols, 5);
  DeviceWeight gw = gpu_->upload(w.view), cw = cpu_->upload(w.view);
  float* gx = dev(*gpu_, std::vector<float>(size_t(cols), 0.f));
  float* gy = poisoned(*gpu_, size_t(rows));
  gpu_->matmul(gx, 1, gw, gy);  // warm-up outside the capture
  gpu_->begin_capture();
  gpu_->matmul(gx, 1, gw, gy);
  gpu_->act_mul(gy, gy, rows, Activation::SiLU, gy);
  const int g = gpu_->end_capture();
  for (uint32_t round = 0; round < 3; ++round) {
    auto x = randn(size_t(cols), 40 + round);
    gpu_->from_host(x.data(), gx, cols);
    gpu_->replay(g);
    float* cx = dev(*cpu_, fast_input(x, DType::Q4_K, 1, cols));
    float* cy = poisoned(*cpu_, size_t(rows));
    cpu_->matmul(cx, 1, cw, cy);
    cpu_->act_mul(cy, cy, rows, Activation::SiLU, cy);
    EXPECT_LT(rel_err(host(*gpu_, gy, size_t(rows)), host(*cpu_, cy, size_t(rows))), 1e-5);
  }
}

TEST_F(CudaOps, OutOfMemoryIsAClearError) {
  try {
    gpu_->alloc_kv(64, 8, 128, int64_t(1) << 24, 8);  // 2 x 32 TiB
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLimit);
    EXPECT_NE(std::string(e.what()).find("KV cache"), std::string::npos) << e.what();
  }
  float* p = gpu_->alloc(16);  // the device still works afterwards
  gpu_->release(p);
}

}  // namespace
}  // namespace brisk
#endif
