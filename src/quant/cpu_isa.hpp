// Which x86 vector extension the CPU kernels use. One binary runs on every x86-64: the
// kernels for each level are compiled with their own target flags, and the level is chosen
// once, from CPUID and from XGETBV (the OS must save the wider registers for us to use them).
// Tests and the CLI can force a lower level ("AVX2 on a machine that has more"); nothing
// reads the environment here.
#pragma once

#include <optional>
#include <string_view>

namespace brisk::quant {

// Ordered: each level implies the ones below it.
enum class CpuIsa {
  kScalar = 0,      // portable C++, the reference definitions
  kAvx2 = 1,        // AVX2 + FMA + F16C
  kAvxVnni = 2,     // + AVX-VNNI (256-bit int8 dot products: Alder Lake, Zen 5, Sapphire Rapids)
  kAvx512Vnni = 3,  // + AVX-512 F/BW/VL/VNNI (Ice Lake, Sapphire Rapids, Zen 4)
};

// The best level this CPU and OS support (detected once).
CpuIsa detected_cpu_isa();

// The level the kernels use now: the detected one unless lowered by force_cpu_isa.
CpuIsa active_cpu_isa();

// Use at most `wanted` (never more than the detected level); returns the level in use.
CpuIsa force_cpu_isa(CpuIsa wanted);

// "scalar", "avx2", "avx-vnni", "avx512-vnni".
const char* cpu_isa_name(CpuIsa isa);
inline const char* cpu_isa_name() { return cpu_isa_name(active_cpu_isa()); }

// The level named as cpu_isa_name prints it; "native" is detected_cpu_isa(); nullopt if unknown.
std::optional<CpuIsa> cpu_isa_from_name(std::string_view name);

}  // namespace brisk::quant
