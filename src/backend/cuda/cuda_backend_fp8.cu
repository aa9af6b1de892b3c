// FP8 E4M3 weights on the CUDA backend beyond the format decoders: products above the
// GEMV's batch on the FP8 tensor cores (cuBLASLt, sm_89+) with activations quantized per
// token (or per token and 128 columns for block-scaled weights), and static activation
// scales, which round a product's input through FP8 as the CPU oracle does.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_backend_impl.hpp"

namespace brisk::cuda {
namespace {

constexpr int64_t kBlock = 128;  // the block of Qwen3-style FP8 checkpoints (weight_scale_inv)

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// cuBLASLt's FP8 products want the token count a multiple of 4: padding tokens (zeros) go
// through the product and their outputs are dropped.
int64_t padded_tokens(int64_t n) { return round_up(n, 4); }

Gemm::Fp8Scaling scaling_of(const DeviceWeight& w) {
  return w.scale_cols ? Gemm::Fp8Scaling::Block128 : Gemm::Fp8Scaling::Outer;
}

}  // namespace

// One scale per 128 x 128 block where the row scales are that (every row of a block of
// rows the same, 128 columns a group), in cuBLASLt's layout: [ceil(rows / 128)][groups
// rounded up to 4]; null where they are not, so FP8 GEMMs skip w.
const float* CudaBackend::upload_fp8_blocks(const WeightView& w) {
  if (w.dtype != DType::F8_E4M3 || w.scale_cols != kBlock || !w.scales) return nullptr;
  const int64_t groups = (w.cols + kBlock - 1) / kBlock, blocks = (w.rows + kBlock - 1) / kBlock;
  const int64_t stride = round_up(groups, 4);
  std::vector<float> table(size_t(blocks * stride), 0.f);
  for (int64_t r = 0; r < w.rows; ++r) {
    const float* row = w.scales + r * groups;
    float* block = table.data() + (r / kBlock) * stride;
    if (r % kBlock == 0)
      std::memcpy(block, row, size_t(groups) * 4);
    else if (std::memcmp(block, row, size_t(groups) * 4) != 0)
      return nullptr;
  }
  auto* d = static_cast<float*>(device_alloc(table.size() * 4, "block scales of " + w.name));
  uploads_.push_back(d);
  BRISK_CUDA_CHECK(cudaMemcpy(d, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  return d;
}

bool CudaBackend::use_fp8_gemm(const DeviceWeight& w, int64_t n) {
  if (exact_ || !mmq_ || w.dtype != DType::F8_E4M3 || n <= kGemvMaxTokens || cc_major_ * 10 + cc_minor_ < 89)
    return false;
  if ((w.scale_cols && !w.block_scales) || w.rows % 4 != 0 || w.cols % 16 != 0) return false;
  return gemm_->fp8_output(w.rows, padded_tokens(n), w.cols, scaling_of(w)) != Gemm::Fp8Output::None;
}

const Fp8Activations& CudaBackend::quantize_fp8_input(const float* x, int64_t n, const DeviceWeight& w) {
  const bool block = scaling_of(w) == Gemm::Fp8Scaling::Block128;
  const int64_t np = padded_tokens(n);
  const int64_t group = block ? kBlock : w.cols, groups = (w.cols + group - 1) / group;
  const uint64_t q_bytes = uint64_t(round_up(np * w.cols, 256));
  const uint64_t scale_count = uint64_t(block ? np * groups : np);
  auto* buf = static_cast<uint8_t*>(scratch(scratch_slots_, kSlotX8, q_bytes + scale_count * 4));
  fp8_view_ = Fp8Activations{buf, reinterpret_cast<float*>(buf + q_bytes), block ? np : 0, 1};
  if (np > n) BRISK_CUDA_CHECK(cudaMemsetAsync(buf, 0, q_bytes + scale_count * 4, stream_));  // padding: zeros
  quantize_fp8_activations(x, n, w.cols, group, w.input_scale, fp8_view_, stream_);
  return fp8_view_;
}

// y (+)= the product of the first n tokens; where cuBLASLt cannot write y itself (padded
// tokens, or a bf16 output) the product goes to scratch first.
void CudaBackend::run_fp8_gemm(const DeviceWeight& w, const Fp8Activations& xq, int64_t n, float* y,
                               const float* bias, bool accumulate) {
  const Gemm::Fp8Scaling scaling = scaling_of(w);
  const Gemm::Fp8Operands op{w.data, scaling == Gemm::Fp8Scaling::Block128 ? w.block_scales : w.scales, xq.q,
                             xq.scales, scaling};
  const int64_t np = padded_tokens(n), count = n * w.rows;
  const bool f32 = gemm_->fp8_output(w.rows, np, w.cols, scaling) == Gemm::Fp8Output::F32;
  if (f32 && np == n) {
    gemm_->run_fp8(op, y, w.rows, np, w.cols, accumulate);
  } else if (f32) {
    auto* out = static_cast<float*>(scratch(scratch_slots_, kSlotOut16, uint64_t(np * w.rows) * 4));
    gemm_->run_fp8(op, out, w.rows, np, w.cols, false);
    if (accumulate)
      cuda::add(y, out, count, stream_);
    else
      BRISK_CUDA_CHECK(cudaMemcpyAsync(y, out, uint64_t(count) * 4, cudaMemcpyDeviceToDevice, stream_));
  } else {
    void* out = scratch(scratch_slots_, kSlotOut16, uint64_t(np * w.rows) * 2);
    gemm_->run_fp8(op, out, w.rows, np, w.cols, false);
    add_bf16(out, y, count, accumulate, stream_);
  }
  if (bias) add_bias(y, bias, n, w.rows, stream_);
}

// What a product of w sees of x: x itself, or, with a static activation scale, x rounded
// through FP8 at that scale (quant/fp8.hpp's round_through_fp8, as the oracle rounds it).
const float* CudaBackend::fp8_static_input(const float* x, int64_t n, const DeviceWeight& w) {
  if (w.dtype != DType::F8_E4M3 || w.input_scale <= 0.f) return x;
  auto* out = static_cast<float*>(scratch(scratch_slots_, kSlotRounded, uint64_t(n * w.cols) * 4));
  round_through_fp8(x, n * w.cols, w.input_scale, out, stream_);
  x16_of_ = nullptr;
  return out;
}

}  // namespace brisk::cuda
