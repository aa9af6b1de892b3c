// Entry points of src/quant: route each DType to its codec, and dot_row to the widest
// kernel this CPU has (quant/cpu_isa.hpp). The plain float formats (F32, F16, BF16) are handled here.
#include "quant/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#include <string>

#include "base/error.hpp"
#include "base/half.hpp"
#include "quant/blocks.hpp"
#include "quant/cpu_isa.hpp"
#include "quant/dot.hpp"
#include "quant/fp8.hpp"

namespace brisk {
namespace {

void check_row(DType type, int64_t n, const char* what) {
  const DTypeTraits& t = dtype_traits(type);
  if (n < 0 || n % t.block_elems != 0)
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": " + std::to_string(n) +
                                          " elements is not a whole number of " + t.name +
                                          " blocks");
}

}  // namespace

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  check_row(type, n, "dequantize_row");
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (type) {
    case DType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case DType::Q4_0: quant::dequantize_q4_0(src, dst, n); return;
    case DType::Q5_0: quant::dequantize_q5_0(src, dst, n); return;
    case DType::Q8_0: quant::dequantize_q8_0(src, dst, n); return;
    case DType::Q4_K: quant::dequantize_q4_k(src, dst, n); return;
    case DType::Q5_K: quant::dequantize_q5_k(src, dst, n); return;
    case DType::Q6_K: quant::dequantize_q6_k(src, dst, n); return;
    case DType::I8:  // the values; the row's scale is applied by the caller
      for (int64_t i = 0; i < n; ++i) dst[i] = float(static_cast<const int8_t*>(src)[i]);
      return;
    case DType::F8_E4M3:  // the values; the scales are applied by the caller
      for (int64_t i = 0; i < n; ++i) dst[i] = fp8_e4m3_to_float(bytes[i]);
      return;
  }
  throw Error(ErrorCode::kInternal, "dequantize_row: unsupported dtype");
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  check_row(type, n, "quantize_row");
  auto* out = static_cast<uint8_t*>(dst);
  switch (type) {
    case DType::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(src[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::Q4_0: quant::quantize_q4_0(src, dst, n); return;
    case DType::Q5_0: quant::quantize_q5_0(src, dst, n); return;
    case DType::Q8_0: quant::quantize_q8_0(src, dst, n); return;
    case DType::Q4_K: quant::quantize_q4_k(src, dst, n); return;
    case DType::Q5_K: quant::quantize_q5_k(src, dst, n); return;
    case DType::Q6_K: quant::quantize_q6_k(src, dst, n); return;
    case DType::I8:
      throw Error(ErrorCode::kInvalidArgument, "I8 rows carry a scale: use quantize_row_i8");
    case DType::F8_E4M3:
      throw Error(ErrorCode::kInvalidArgument, "F8_E4M3 rows carry a scale: use quantize_row_fp8");
  }
  throw Error(ErrorCode::kInternal, "quantize_row: unsupported dtype");
}

float quantize_row_i8(const float* src, int8_t* dst, int64_t n) {
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
  const float scale = amax / 127.f, inv = scale > 0.f ? 1.f / scale : 0.f;
  for (int64_t i = 0; i < n; ++i) dst[i] = int8_t(std::lround(std::clamp(src[i] * inv, -127.f, 127.f)));
  return scale;
}

float dot_row(DType type, const void* w_row, const float* x, int64_t n) {
  check_row(type, n, "dot_row");
  if (type == DType::I8 || type == DType::F8_E4M3) {  // as F32 over the decoded values: the same order
    thread_local std::vector<float> row;
    row.resize(size_t(n));
    dequantize_row(type, w_row, row.data(), n);
    type = DType::F32;
    w_row = row.data();
  }
#if BRISK_X86_KERNELS
  if (quant::active_cpu_isa() >= quant::CpuIsa::kAvx2) return quant::dot_row_avx2(type, w_row, x, n);
#endif
  return quant::dot_row_scalar(type, w_row, x, n);
}

}  // namespace brisk
