// The CUDA products (GEMV and GEMM in every weight format, the fused q/k/v and gate/up
// projections; FP8 also with block scales) and the embedding lookup against the CPU oracle.
// Tolerances and helpers: cuda_ops_util.hpp. Without a GPU (CI) the tests skip.
#include "backend/cuda_ops_util.hpp"

#if BRISK_WITH_CUDA
namespace brisk {
namespace {
using namespace brisk::test;

TEST_F(CudaOps, MatmulEveryFormatAndShape) {
  uint32_t seed = 1;
  for (DType t : kTypes) {
    const bool k = dtype_traits(t).block_elems == 256;
    for (int64_t cols : k ? std::vector<int64_t>{256, 768, 3584} : std::vector<int64_t>{96, 352, 1024, 2080}) {
      if ((t == DType::I8 || t == DType::F8_E4M3) && cols % 16) continue;
      for (int64_t rows : {1, 7, 33, 257, 1000}) {
        Weight w = make_weight(t, rows, cols, seed++);
        DeviceWeight gw = gpu_->upload(w.view), cw = cpu_->upload(w.view), ew = exact_->upload(w.view);
        auto bias_h = gaussian(size_t(rows), seed++);
        WeightView bv{"b", DType::F32, 1, rows, bias_h.data()};
        DeviceWeight gb = gpu_->upload(bv), cb = cpu_->upload(bv), eb = exact_->upload(bv);
        for (int64_t n : {1, 2, 5, 8, 9, 17, 33, 64, 65}) {
          for (int mode = 0; mode < 3; ++mode) {  // plain, bias, accumulate
            const bool bias = mode == 1, acc = mode == 2;
            auto x = gaussian(size_t(n * cols), seed++);
            auto y0 = acc ? gaussian(size_t(n * rows), seed++) : std::vector<float>(size_t(n * rows), NAN);
            for (Backend* b : {gpu_.get(), exact_.get()}) {
              const bool exact = b == exact_.get();
              // The oracle, fed what this backend's kernel actually multiplies.
              float* cx = dev(*cpu_, exact ? x : fast_input(x, t, n, cols, 0, rows));
              float* cy = dev(*cpu_, acc ? y0 : std::vector<float>(y0.size(), 0.f));
              cpu_->matmul(cx, n, cw, cy, bias ? &cb : nullptr, acc);
              auto ref = host(*cpu_, cy, y0.size());
              float* gx = dev(*b, x);
              float* gy = dev(*b, y0);
              b->matmul(gx, n, exact ? ew : gw, gy, bias ? (exact ? &eb : &gb) : nullptr, acc);
              // (Relative to an RMS of at least 1: a single output that the bias nearly
              // cancels would otherwise measure rounding against almost nothing.)
              const double err = rel_err_floored(host(*b, gy, y0.size()), ref, 1.0);
              const double tol = matmul_tolerance(t, n, cols, exact, rows);
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
        for (int i = 0; i < 3; ++i) w.push_back(make_weight(t, rows[i], cols, seed++)), bias.push_back(gaussian(size_t(rows[i]), seed++));
        for (int64_t n : {1, 3, 8, 20, 64, 100}) {
          auto x = gaussian(size_t(n * cols), seed++);
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
            // The oracle sees what the kernel does (FP8: all three on the FP8 GEMM, or none).
            float* bx = dev(*b, b == gpu_.get() ? x : fast_input(x, t, n, cols, 0, width));
            b->matmul_multi(bx, n, wp, ys, bp, 3);
            float* g = poisoned(*b, size_t(n * rows[1]));
            float* scratch = poisoned(*b, size_t(n * rows[1]));
            b->matmul_gated(bx, n, dw[1], dw[2], Activation::SiLU, g, scratch);
            auto& out = b == gpu_.get() ? got : ref;
            for (int i = 0; i < 3; ++i) out.push_back(host(*b, ys[i], size_t(n * rows[i])));
            out.push_back(host(*b, g, size_t(n * rows[1])));
          }
          const double tol = matmul_tolerance(t, n, cols, false, width);
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

// FP8 with scales per 128 columns of a row (a last group that is partial): in 128 x 128
// blocks (Qwen3's weight_scale_inv as the loader expands it to rows), which the FP8 tensor
// cores take with activations scaled per token and 128 columns, and varying by row, which
// only the decoders take. The GEMV, the GEMM and the embedding gather against the oracle,
// which applies the same scales as it decodes a row.
TEST_F(CudaOps, Fp8BlockScaledProductsAndEmbedding) {
  uint32_t seed = 900;
  for (const bool blocks : {true, false})
  for (int64_t cols : {384, 208}) {
    const int64_t groups = (cols + 127) / 128;
    for (int64_t rows : {1, 33, 260}) {  // 260: three blocks of rows, the last partial
      Weight w = make_weight(DType::F8_E4M3, rows, cols, seed++);
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<float> u(0.25f, 2.f);
      w.scales.resize(size_t(rows * groups));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < groups; ++g)
          w.scales[size_t(r * groups + g)] = blocks && r % 128 ? w.scales[size_t((r - r % 128) * groups + g)] : u(rng) * 0.01f;
      w.view.scales = w.scales.data();
      w.view.scale_cols = 128;
      DeviceWeight gw = gpu_->upload(w.view), cw = cpu_->upload(w.view), ew = exact_->upload(w.view);
      for (int64_t n : {1, 5, 9, 64}) {
        auto x = gaussian(size_t(n * cols), seed++);
        for (Backend* b : {gpu_.get(), exact_.get()}) {
          const bool exact = b == exact_.get();
          float* cy = poisoned(*cpu_, size_t(n * rows));  // the oracle on what the kernel multiplies
          const bool fp8 = !exact && blocks && fp8_path(DType::F8_E4M3, n, rows);  // (else float activations)
          cpu_->matmul(dev(*cpu_, fp8 ? fast_input(x, DType::F8_E4M3, n, cols, 128) : x), n, cw, cy, nullptr, false);
          const auto ref = host(*cpu_, cy, size_t(n * rows));
          float* gy = poisoned(*b, size_t(n * rows));
          b->matmul(dev(*b, x), n, exact ? ew : gw, gy, nullptr, false);
          const double tol = fp8 ? matmul_tolerance(DType::F8_E4M3, n, cols, false, rows) : n > 8 && !exact ? 2e-2 : 3e-5;
          EXPECT_LT(rel_err(host(*b, gy, size_t(n * rows)), ref), tol)
              << rows << "x" << cols << " n=" << n << (exact ? " exact" : "") << (blocks ? " blocks" : " rows");
        }
        TearDown();
        owned_.clear();
      }
      std::vector<int32_t> ids = {0, int32_t(rows - 1), 0};
      float* go = poisoned(*gpu_, ids.size() * size_t(cols));
      float* co = poisoned(*cpu_, ids.size() * size_t(cols));
      gpu_->embed(gw, dev_ids(*gpu_, ids), 3, 1.f, go);
      cpu_->embed(cw, dev_ids(*cpu_, ids), 3, 1.f, co);
      EXPECT_LT(rel_err(host(*gpu_, go, 3 * size_t(cols)), host(*cpu_, co, 3 * size_t(cols))), 1e-6) << cols;
      TearDown();
      owned_.clear();
    }
  }
}

// A static activation scale (compressed-tensors' input_scale): every product rounds its
// input through FP8 at that scale, saturating, as the oracle does; the FP8 GEMM then takes
// the scale as it is. Some inputs are beyond 448 x the scale, to check the saturation.
TEST_F(CudaOps, Fp8StaticActivationScale) {
  uint32_t seed = 950;
  for (int64_t rows : {7, 256}) {
    const int64_t cols = 512;
    Weight w = make_weight(DType::F8_E4M3, rows, cols, seed++);
    w.view.input_scale = 3.f / 448.f;  // inputs (gaussian) past 3 saturate
    DeviceWeight gw = gpu_->upload(w.view), cw = cpu_->upload(w.view), ew = exact_->upload(w.view);
    for (int64_t n : {1, 8, 9, 64}) {
      auto x = gaussian(size_t(n * cols), seed++, 1.5f);
      float* cy = poisoned(*cpu_, size_t(n * rows));
      cpu_->matmul(dev(*cpu_, x), n, cw, cy, nullptr, false);
      const auto ref = host(*cpu_, cy, size_t(n * rows));
      for (Backend* b : {gpu_.get(), exact_.get()}) {
        const bool exact = b == exact_.get();
        float* gy = poisoned(*b, size_t(n * rows));
        b->matmul(dev(*b, x), n, exact ? ew : gw, gy, nullptr, false);
        const double tol = exact || n <= 8 ? 3e-5 : fp8_path(DType::F8_E4M3, n, rows) ? 2e-3 : 2e-2;
        EXPECT_LT(rel_err(host(*b, gy, size_t(n * rows)), ref), tol) << rows << " rows n=" << n << (exact ? " exact" : "");
      }
      TearDown();
      owned_.clear();
    }
  }
}

}  // namespace
}  // namespace brisk
#endif  // BRISK_WITH_CUDA
