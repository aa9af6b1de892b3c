// The head dimensions the attention kernels are compiled for, in one place: the kernels are
// templates on the head size, and these turn the model's run-time value into one of them.
#pragma once

#include <type_traits>

namespace brisk::cuda {

template <int HD>
using HeadDim = std::integral_constant<int, HD>;

// The tensor-core kernels: exactly 64, 128 or 256. False (nothing called) for any other.
template <typename F>
bool with_mma_head_dim(int hd, F&& f) {
  switch (hd) {
    case 64: f(HeadDim<64>{}); return true;
    case 128: f(HeadDim<128>{}); return true;
    case 256: f(HeadDim<256>{}); return true;
    default: return false;
  }
}

// The float kernels: the smallest of 32, 64, 128 and 256 that holds the head (the lanes
// skip the rest). False for a head over 256.
template <typename F>
bool with_head_dim_bound(int hd, F&& f) {
  if (hd <= 32) return f(HeadDim<32>{}), true;
  if (hd <= 64) return f(HeadDim<64>{}), true;
  if (hd <= 128) return f(HeadDim<128>{}), true;
  if (hd <= 256) return f(HeadDim<256>{}), true;
  return false;
}

}  // namespace brisk::cuda
