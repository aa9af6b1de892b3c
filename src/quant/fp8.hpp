// FP8 E4M3 ("e4m3fn": 4 exponent bits of bias 7, 3 mantissa bits, no infinities, NaN =
// S.1111.111, largest finite 448), the weight format Hopper's tensor cores and the FP8
// checkpoints of Hugging Face use. Decoding is a 256-entry table; encoding rounds to
// nearest even and saturates at +-448, as quantizers want (ml_dtypes and PyTorch would give
// NaN above 464; values that need saturation never come out of a scaled quantizer anyway).
#pragma once

#include <cstdint>

namespace brisk {

float fp8_e4m3_to_float(uint8_t v);
uint8_t float_to_fp8_e4m3(float x);

constexpr float kFp8E4M3Max = 448.f;

// dst = fp8(src / scale) with scale = max|src| / 448 (1 where the row is all zeros, so the
// row decodes to zeros); returns the scale.
float quantize_row_fp8(const float* src, uint8_t* dst, int64_t n);

// out = fp8(x / scale) x scale, saturating at +-448 x scale: what a product with a static
// activation scale sees of its input (out may be x).
void round_through_fp8(const float* x, int64_t n, float scale, float* out);

}  // namespace brisk
