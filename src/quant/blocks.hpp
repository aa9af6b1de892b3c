// The GGUF/ggml block structs, byte for byte (ggml-common.h layouts, QK_K = 256), shared by
// the scalar codecs and the SIMD dot products. Internal to src/quant; everyone else sees bytes.
#pragma once

#include <cstdint>
#include <cstring>

namespace brisk::quant {

constexpr int kQK = 32;    // elements per legacy block (Q4_0, Q5_0, Q8_0)
constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;              // f16 scale
  uint8_t qs[kQK / 2];     // element j in the low nibble of qs[j], element j+16 in the high one
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];           // bit j (little-endian u32) = 5th bit of element j
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ4_K {
  uint16_t d;              // super-block scale for the 6-bit scales
  uint16_t dmin;           // super-block scale for the 6-bit mins
  uint8_t scales[12];      // 8 scales + 8 mins, 6 bits each (see scale_min_k4)
  uint8_t qs[kQKK / 2];    // 64 elements per 32 bytes: low nibbles then high nibbles
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];    // bit s of qh[l] = 5th bit of element 32*s + l
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];    // low 4 bits
  uint8_t qh[kQKK / 4];    // high 2 bits
  int8_t scales[kQKK / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(alignof(BlockQ6_K) == 2);

// 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K:
// j < 4 sit in the low 6 bits of bytes j and j+4; j >= 4 take 4 bits from byte j+4 and
// their top 2 bits from the spare high bits of bytes j-4 (scale) and j (min).
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Scalar codecs, one block-row at a time (n = elements, a multiple of the block).
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);

void quantize_q4_0(const float* src, void* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n);
void quantize_q8_0(const float* src, void* dst, int64_t n);
void quantize_q4_k(const float* src, void* dst, int64_t n);
void quantize_q5_k(const float* src, void* dst, int64_t n);
void quantize_q6_k(const float* src, void* dst, int64_t n);

// Read / write block i of a byte row; memcpy because rows need not be 2-byte aligned.
template <typename B>
B load_block(const void* src, int64_t i) {
  B b;
  std::memcpy(&b, static_cast<const uint8_t*>(src) + i * int64_t(sizeof(B)), sizeof(B));
  return b;
}

template <typename B>
void store_block(void* dst, int64_t i, const B& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + i * int64_t(sizeof(B)), &b, sizeof(B));
}

}  // namespace brisk::quant
