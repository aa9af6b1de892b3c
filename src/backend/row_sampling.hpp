// The backend sample op, defined once: what token a row of logits gives under RowSampling.
// The CPU backend runs sample_row below; the CUDA kernel (backend/cuda/sampling.cu) computes
// the same function in parallel. Every sum that decides a token is an exact integer sum
// (probabilities in fixed point), so the result does not depend on summation order, and a
// counter-based generator makes the draw a pure function of (seed, step).
//
// For temperature > 0, as llama.cpp's default chain (and engine/sampler.hpp):
//   1. top_k: keep logits >= the k-th largest (ties at the cut are all kept)
//   2. top_p: of those, keep the smallest set of largest logits whose temperature-1 mass
//      reaches top_p of the kept mass (all of a tied logit value or none)
//   3. min_p: keep p >= min_p * p_max, i.e. logit >= max + log(min_p)
//   4. weights exp((l - max) / temperature) in fixed point; draw u = uniform(seed, step);
//      the token is the first id (ascending) whose running weight exceeds u * total.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/backend.hpp"

#if defined(__CUDACC__)
#define BRISK_HD __host__ __device__ inline
#else
#define BRISK_HD inline
#endif

namespace brisk {

// Probabilities (<= 1) as integers: 2^40 units each, so 2^18 tokens sum below 2^58.
constexpr double kSampleFixedScale = 1099511627776.0;

BRISK_HD uint64_t sample_fixed(float p) { return uint64_t(double(p) * kSampleFixedScale); }

// A float's bits mapped so that unsigned order is float order (for radix selection).
BRISK_HD uint32_t float_order_key(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
BRISK_HD float float_from_order_key(uint32_t k) {
  uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// uniform(seed, step) in [0, 1): splitmix64 of the pair, top 53 bits.
BRISK_HD double sample_uniform(uint64_t seed, uint64_t step) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (step + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / 9007199254740992.0);
}

// The logit floor min_p implies relative to the row maximum (-inf when off).
BRISK_HD float min_p_floor(float max_logit, float min_p) {
  return min_p > 0.f ? max_logit + logf(min_p) : -INFINITY;
}

int32_t sample_row(const float* logits, int64_t vocab, const RowSampling& p);

// One LogitEdit on its row (row points at the row's first logit), as every backend does it.
BRISK_HD void apply_logit_edit(float* row, const LogitEdit& e) {
  float& l = row[e.id];
  l = l > 0.f ? l / e.penalty : l * e.penalty;
  l -= e.subtract;
}

}  // namespace brisk
