// Which of a token's keys each split of decode attention takes. A launch has a fixed number of
// splits per token (it depends only on the batch shape, so a captured step replays at every
// context length), but a token uses only as many as give each at least decode_min_keys() keys:
// a short context then runs in a few full blocks instead of many nearly empty ones, the
// unused splits return at once, and the combine stops at the first empty split (a token's
// splits take its keys in order, so every split after an empty one is empty too).
#pragma once

#include <cstdint>

#include "backend/cuda/launch.cuh"

namespace brisk::cuda {

// Keys per split at least for a launch over n tokens (0 would give every split a share).
int decode_min_keys(int64_t n, int n_kv_heads);

struct KeySlice {
  int64_t j0, j1;  // keys [j0, j1) of the token's sequence; empty when j0 >= j1
};

// Split s of `splits` for a query at position p (window: 0, or a sliding window's length).
__device__ __forceinline__ KeySlice decode_slice(int64_t p, int window, int splits, int s, int min_keys) {
  const int64_t lo = window > 0 ? max(int64_t(0), p - window + 1) : 0;
  const int64_t len = p - lo + 1;
  const int64_t used = min_keys > 0 ? min(int64_t(splits), max(int64_t(1), (len + min_keys - 1) / min_keys)) : splits;
  const int64_t chunk = (len + used - 1) / used;
  const int64_t j0 = lo + s * chunk;
  return {j0, s < used ? min(p + 1, j0 + chunk) : j0};
}

}  // namespace brisk::cuda
