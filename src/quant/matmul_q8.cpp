// matmul_q8: checks its arguments, then hands the whole product to the tiled kernel of the
// active level (q8_tile.hpp); the scalar fallback is dot_row_q8_scalar per (row, token),
// the definition those kernels reproduce.
#include <string>
#include <vector>

#include "base/error.hpp"
#include "quant/cpu_isa.hpp"
#include "quant/dot.hpp"
#include "quant/quantize.hpp"

namespace brisk {
namespace {

bool run_kernel(DType type, const uint8_t* w, uint64_t row_bytes, int64_t rows, const quant::Q8Row* x,
                int64_t n, int64_t cols, float* y, int64_t ldy) {
#if BRISK_X86_KERNELS
  switch (quant::active_cpu_isa()) {
    case quant::CpuIsa::kAvx512Vnni: return quant::avx512::matmul_q8(type, w, row_bytes, rows, x, n, cols, y, ldy);
    case quant::CpuIsa::kAvxVnni: return quant::avxvnni::matmul_q8(type, w, row_bytes, rows, x, n, cols, y, ldy);
    case quant::CpuIsa::kAvx2: return quant::avx2::matmul_q8(type, w, row_bytes, rows, x, n, cols, y, ldy);
    case quant::CpuIsa::kScalar: break;
  }
#endif
  return false;
}

}  // namespace

void matmul_q8(DType type, const void* w, uint64_t row_bytes, int64_t rows, const QuantizedActivations* x,
               int64_t n, float* y, int64_t ldy) {
  if (!dot_row_q8_supported(type))
    throw Error(ErrorCode::kInvalidArgument, std::string("matmul_q8: no int8 path for ") + dtype_name(type));
  if (rows <= 0 || n <= 0) return;
  const int64_t cols = x[0].n;
  if (cols % dtype_traits(type).block_elems != 0 || dtype_bytes(type, uint64_t(cols)).value_or(~0ull) > row_bytes)
    throw Error(ErrorCode::kInvalidArgument, "matmul_q8: row length " + std::to_string(cols) +
                                                 " does not fit rows of " + std::to_string(row_bytes) + " " +
                                                 dtype_name(type) + " bytes");
  std::vector<quant::Q8Row> views(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    if (x[t].n != cols) throw Error(ErrorCode::kInvalidArgument, "matmul_q8: tokens of different lengths");
    views[size_t(t)] = {x[t].q.data(), x[t].d.data(), x[t].sum.data()};
  }
  const auto* wb = static_cast<const uint8_t*>(w);
  if (run_kernel(type, wb, row_bytes, rows, views.data(), n, cols, y, ldy)) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < n; ++t) y[t * ldy + r] = quant::dot_row_q8_scalar(type, wb + uint64_t(r) * row_bytes, x[t]);
}

}  // namespace brisk
