// Single-core timing of dot_row, the CPU matmul's inner loop: y[j] = dot_row(W_j, x) over a
// 640 x 2048 weight matrix per dtype, reported as GB/s of weight bytes streamed. Not in
// CMake; build it by hand against the libraries of a normal build (no ISA flags: the
// kernels pick their level at run time):
//
//   bb brisk_quant && g++ -O2 -std=c++20 -Isrc bench/quant_dot_bench.cpp \
//       build/libbrisk_quant.a build/libbrisk_base.a -o build/quant_dot_bench
//   ./build/quant_dot_bench [rows] [cols] [seconds per type]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "quant/quantize.hpp"
#include "cpu_timing.hpp"

using namespace brisk;

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 640;
  const int64_t cols = argc > 2 ? std::atoll(argv[2]) : 2048;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 0.5;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> wf(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(cols)),
      y(static_cast<size_t>(rows));
  for (float& v : wf) v = nd(rng);
  for (float& v : x) v = nd(rng);

  std::printf("%lld x %lld, one thread; q8 = dot_row_q8 incl. quantize_activations per matvec\n"
              "%-6s %8s %10s %8s %12s %8s %7s\n", (long long)rows, (long long)cols, "type", "MB",
              "us/matvec", "GB/s", "q8 us/matvec", "q8 GB/s", "speedup");
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const uint64_t row_bytes = *dtype_bytes(t, uint64_t(cols));
    std::vector<uint8_t> w(row_bytes * size_t(rows));
    for (int64_t r = 0; r < rows; ++r) quantize_row(t, wf.data() + r * cols, w.data() + r * row_bytes, cols);
    auto matvec = [&] {
      for (int64_t r = 0; r < rows; ++r) y[size_t(r)] = dot_row(t, w.data() + r * row_bytes, x.data(), cols);
    };
    QuantizedActivations xq;
    auto matvec_q8 = [&] {
      quantize_activations(x.data(), cols, &xq);
      for (int64_t r = 0; r < rows; ++r) y[size_t(r)] = dot_row_q8(t, w.data() + r * row_bytes, xq);
    };
    const double per = time_best(matvec, seconds);
    const double per_q8 = dot_row_q8_supported(t) ? time_best(matvec_q8, seconds) : 0;
    std::printf("%-6s %8.2f %10.1f %8.2f", dtype_name(t), double(w.size()) / 1e6, per * 1e6,
                double(w.size()) / per / 1e9);
    if (per_q8 > 0)
      std::printf(" %12.1f %8.2f %6.2fx", per_q8 * 1e6, double(w.size()) / per_q8 / 1e9, per / per_q8);
    std::printf("\n");
  }
  return 0;
}
