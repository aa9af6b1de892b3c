// Single-thread timing of matmul_q8 (the fast CPU mode's products) on every kernel level this
// machine has: a rows x cols weight against 1 token (decode: GB/s of weight bytes streamed)
// and against n tokens (prefill: tokens/s through this one matrix, and GMAC/s). The old
// path, dot_row_q8 one row and token at a time, is the baseline. Not in CMake; build by hand
// against the libraries of a normal build (no ISA flags: the kernels pick their level):
//
//   bb brisk_quant && g++ -O2 -std=c++20 -Isrc bench/matmul_q8_bench.cpp \
//       build/libbrisk_quant.a build/libbrisk_base.a -o build/matmul_q8_bench
//   ./build/matmul_q8_bench [rows] [cols] [tokens] [seconds per case]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "quant/cpu_isa.hpp"
#include "quant/quantize.hpp"
#include "cpu_timing.hpp"

using namespace brisk;

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int64_t cols = argc > 2 ? std::atoll(argv[2]) : 2048;
  const int64_t n = argc > 3 ? std::atoll(argv[3]) : 64;
  const double seconds = argc > 4 ? std::atof(argv[4]) : 0.3;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> wf(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(n * cols));
  for (float& v : wf) v = nd(rng);
  for (float& v : x) v = nd(rng);
  std::vector<QuantizedActivations> xq(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) quantize_activations(x.data() + t * cols, cols, &xq[size_t(t)]);
  std::vector<float> y(static_cast<size_t>(n * rows));

  std::printf("%lld x %lld, %lld tokens, one thread (detected %s)\n", (long long)rows, (long long)cols,
              (long long)n, quant::cpu_isa_name(quant::detected_cpu_isa()));
  std::printf("%-12s %-5s %14s %14s %16s %14s\n", "level", "type", "1 tok GB/s", "old 1 tok GB/s",
              "n tok GMAC/s", "old GMAC/s");
  for (quant::CpuIsa isa : {quant::CpuIsa::kAvx2, quant::CpuIsa::kAvxVnni, quant::CpuIsa::kAvx512Vnni}) {
    if (isa > quant::detected_cpu_isa()) break;
    quant::force_cpu_isa(isa);
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      if (cols % dtype_traits(t).block_elems != 0) continue;  // e.g. 640 is no K-quant row
      const uint64_t rb = *dtype_bytes(t, uint64_t(cols));
      std::vector<uint8_t> w(rb * size_t(rows));
      for (int64_t r = 0; r < rows; ++r) quantize_row(t, wf.data() + r * cols, w.data() + r * rb, cols);
      auto old = [&](int64_t tokens) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < tokens; ++k) y[size_t(k * rows + r)] = dot_row_q8(t, w.data() + r * rb, xq[size_t(k)]);
      };
      const double one = time_best([&] { matmul_q8(t, w.data(), rb, rows, xq.data(), 1, y.data(), rows); }, seconds, 5);
      const double one_old = time_best([&] { old(1); }, seconds, 5);
      const double many = time_best([&] { matmul_q8(t, w.data(), rb, rows, xq.data(), n, y.data(), rows); }, seconds, 5);
      const double many_old = time_best([&] { old(n); }, seconds, 5);
      const double macs = double(rows) * double(cols) * double(n);
      std::printf("%-12s %-5s %14.2f %14.2f %16.2f %14.2f\n", quant::cpu_isa_name(isa), dtype_name(t),
                  double(w.size()) / one / 1e9, double(w.size()) / one_old / 1e9, macs / many / 1e9,
                  macs / many_old / 1e9);
    }
  }
  return 0;
}
