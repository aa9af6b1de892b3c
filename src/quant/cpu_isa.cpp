// CPUID and XGETBV read once; the active level is an atomic so tests can lower it between
// cases while kernels on other threads read it.
#include "quant/cpu_isa.hpp"

#include <atomic>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define BRISK_X86 1
#endif

namespace brisk::quant {
namespace {

#if BRISK_X86
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) return Regs{};
  return r;
}

// XCR0: which register states the OS saves on a context switch.
uint64_t xcr0() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool bit(unsigned v, int i) { return (v >> i) & 1; }

CpuIsa detect() {
  const Regs l1 = cpuid(1, 0);
  if (!bit(l1.c, 27) || !bit(l1.c, 28)) return CpuIsa::kScalar;  // OSXSAVE, AVX
  const uint64_t xcr = xcr0();
  if ((xcr & 0x6) != 0x6) return CpuIsa::kScalar;                   // XMM and YMM state
  const Regs l7 = cpuid(7, 0);
  const bool avx2 = bit(l7.b, 5) && bit(l1.c, 12) && bit(l1.c, 29);  // AVX2, FMA, F16C
  if (!avx2) return CpuIsa::kScalar;
  const bool zmm_state = (xcr & 0xE0) == 0xE0;                      // opmask, ZMM0-15 high, ZMM16-31
  const bool avx512 = bit(l7.b, 16) && bit(l7.b, 30) && bit(l7.b, 31) && bit(l7.c, 11);  // F, BW, VL, VNNI
  if (zmm_state && avx512) return CpuIsa::kAvx512Vnni;
  if (bit(cpuid(7, 1).a, 4)) return CpuIsa::kAvxVnni;
  return CpuIsa::kAvx2;
}
#else
CpuIsa detect() { return CpuIsa::kScalar; }
#endif

std::atomic<CpuIsa>& active() {
  static std::atomic<CpuIsa> level{detected_cpu_isa()};
  return level;
}

}  // namespace

CpuIsa detected_cpu_isa() {
  static const CpuIsa level = detect();
  return level;
}

CpuIsa active_cpu_isa() { return active().load(std::memory_order_relaxed); }

CpuIsa force_cpu_isa(CpuIsa wanted) {
  const CpuIsa level = wanted < detected_cpu_isa() ? wanted : detected_cpu_isa();
  active().store(level, std::memory_order_relaxed);
  return level;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvxVnni: return "avx-vnni";
    case CpuIsa::kAvx512Vnni: return "avx512-vnni";
  }
  return "?";
}

std::optional<CpuIsa> cpu_isa_from_name(std::string_view name) {
  if (name == "native") return detected_cpu_isa();
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512Vnni})
    if (name == cpu_isa_name(isa)) return isa;
  return std::nullopt;
}

}  // namespace brisk::quant
