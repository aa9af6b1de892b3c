// The CUDA backend's runtime: captured graphs replay with new inputs, and running out of
// device memory is a clear error.
// Tolerances and helpers: cuda_ops_util.hpp. Without a GPU (CI) the tests skip.
#include "backend/cuda_ops_util.hpp"

#if BRISK_WITH_CUDA
namespace brisk {
namespace {
using namespace brisk::test;

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
    auto x = gaussian(size_t(cols), 40 + round);
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
#endif  // BRISK_WITH_CUDA
