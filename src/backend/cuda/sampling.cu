// Sampling on the GPU: one block per row computes exactly backend/row_sampling.hpp's
// function. The k-th largest logit and the top-p cut are found by 4-pass radix selection
// over order-preserving float keys with integer (count or fixed-point mass) histograms, so
// the result is independent of thread scheduling; the draw scans fixed-point weights over
// contiguous per-thread chunks. Only the chosen ids leave the device.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "backend/cuda/kernels.cuh"
#include "backend/row_sampling.hpp"

namespace brisk::cuda {
namespace {

constexpr int kThreads = 1024;

struct ArgMax {
  float v;
  int32_t i;
};
struct ArgMaxOp {
  __device__ ArgMax operator()(const ArgMax& a, const ArgMax& b) const {
    return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
  }
};

// The largest key (with its prefix fixed pass by pass) at which the descending running
// weight reaches `target`; weight(i) is 1 for counting or a fixed-point mass.
template <class Weight>
__device__ uint32_t radix_select(const float* row, int64_t vocab, float cut, uint64_t target, Weight weight,
                                 unsigned long long* hist, uint32_t* shared_prefix) {
  uint32_t prefix = 0, mask = 0;
  uint64_t remaining = target;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += kThreads) hist[b] = 0;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      const float l = row[i];
      if (!(l >= cut)) continue;
      const uint32_t key = float_order_key(l);
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255], (unsigned long long)weight(l));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int chosen = 0;
      for (int b = 255; b >= 0; --b) {
        if (hist[b] > 0 && hist[b] >= remaining) {
          chosen = b;
          break;
        }
        remaining -= hist[b];
      }
      *shared_prefix = prefix | (uint32_t(chosen) << shift);
    }
    __syncthreads();
    prefix = *shared_prefix;
    mask |= 255u << shift;
    __syncthreads();
  }
  return prefix;
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* logits, int64_t stride, int64_t vocab, const RowSampling* params, int32_t* ids) {
  pdl_wait();
  pdl_launch_dependents();
  using Reduce = cub::BlockReduce<ArgMax, kThreads>;
  using ReduceU = cub::BlockReduce<unsigned long long, kThreads>;
  using Scan = cub::BlockScan<unsigned long long, kThreads>;
  __shared__ union {
    typename Reduce::TempStorage r;
    typename ReduceU::TempStorage u;
    typename Scan::TempStorage s;
  } tmp;
  __shared__ unsigned long long hist[256];
  __shared__ uint32_t prefix;
  __shared__ ArgMax best;
  __shared__ unsigned long long total_s;
  __shared__ int32_t found;

  const float* row = logits + int64_t(blockIdx.x) * stride;
  const RowSampling p = params[blockIdx.x];
  ArgMax local{-INFINITY, INT32_MAX};
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float l = row[i];
    if (l > local.v || (l == local.v && int32_t(i) < local.i)) local = {l, int32_t(i)};
  }
  ArgMax b = Reduce(tmp.r).Reduce(local, ArgMaxOp());
  if (threadIdx.x == 0) best = b.i == INT32_MAX ? ArgMax{row[0], 0} : b;
  __syncthreads();
  if (!(p.temperature > 0.f) || best.v == -INFINITY) {  // greedy, or every token banned: as sample_row
    if (threadIdx.x == 0) ids[blockIdx.x] = best.i;
    return;
  }
  const float mx = best.v;
  float cut = -INFINITY;
  if (p.top_k > 0 && p.top_k < vocab)
    cut = float_from_order_key(
        radix_select(row, vocab, -INFINITY, uint64_t(p.top_k), [](float) { return 1ull; }, hist, &prefix));
  if (p.top_p < 1.f) {
    unsigned long long mass = 0;
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads)
      if (row[i] >= cut) mass += sample_fixed(expf(row[i] - mx));
    unsigned long long total = ReduceU(tmp.u).Sum(mass);
    if (threadIdx.x == 0) total_s = total;
    __syncthreads();
    const uint64_t target = uint64_t(double(p.top_p) * double(total_s));
    const float v = float_from_order_key(radix_select(
        row, vocab, cut, target, [mx](float l) { return (unsigned long long)sample_fixed(expf(l - mx)); }, hist,
        &prefix));
    cut = fmaxf(cut, v);
  }
  cut = fmaxf(cut, min_p_floor(mx, p.min_p));

  // The draw: contiguous chunks so the running sum follows ascending ids.
  const int64_t chunk = (vocab + kThreads - 1) / kThreads;
  const int64_t c0 = min(int64_t(vocab), threadIdx.x * chunk), c1 = min(int64_t(vocab), c0 + chunk);
  const float inv_t = 1.f / p.temperature;
  unsigned long long own = 0;
  for (int64_t i = c0; i < c1; ++i)
    if (row[i] >= cut) own += sample_fixed(expf((row[i] - mx) * inv_t));
  unsigned long long before = 0, total = 0;
  Scan(tmp.s).ExclusiveSum(own, before, total);
  if (threadIdx.x == 0) found = best.i;
  __syncthreads();
  const uint64_t target = uint64_t(sample_uniform(p.seed, p.step) * double(total));
  if (before <= target && target < before + own) {
    unsigned long long run = before;
    for (int64_t i = c0; i < c1; ++i) {
      if (!(row[i] >= cut)) continue;
      run += sample_fixed(expf((row[i] - mx) * inv_t));
      if (run > target) {
        found = int32_t(i);
        break;
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) ids[blockIdx.x] = found;
}

__global__ void edit_logits_kernel(float* logits, int64_t stride, const LogitEdit* edits, int64_t n) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) apply_logit_edit(logits + int64_t(edits[i].row) * stride, edits[i]);
}

// One thread a token: its bit clear in the row's mask means -inf. The mask words are read by
// 64 neighbouring threads at once (one cached load); only banned entries are written.
__global__ void mask_logits_kernel(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits,
                                   const int32_t* rows, int64_t words) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= vocab) return;
  const uint64_t word = bits[int64_t(blockIdx.y) * words + (t >> 6)];
  if (!((word >> (t & 63)) & 1)) logits[int64_t(rows[blockIdx.y]) * stride + t] = -INFINITY;
}

__global__ void take_tokens_kernel(int32_t* tokens, const int32_t* from, const int32_t* prev, int64_t n) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && from[i] >= 0) tokens[i] = prev[from[i]];
}

}  // namespace

void sample(const float* logits, int64_t rows, int64_t stride, int64_t vocab, const RowSampling* params, int32_t* ids,
            cudaStream_t s) {
  if (rows <= 0) return;
  launch(sample_kernel, unsigned(rows), kThreads, 0, s, logits, stride, vocab, params, ids);
  BRISK_LAUNCH_CHECK();
}

void edit_logits(float* logits, int64_t stride, const LogitEdit* edits, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  launch(edit_logits_kernel, unsigned((n + 255) / 256), 256, 0, s, logits, stride, edits, n);
  BRISK_LAUNCH_CHECK();
}

void mask_logits(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits, const int32_t* rows, int64_t n,
                 cudaStream_t s) {
  if (n <= 0 || vocab <= 0) return;
  const dim3 grid(unsigned((vocab + 255) / 256), unsigned(n));
  launch(mask_logits_kernel, grid, 256, 0, s, logits, stride, vocab, bits, rows, (vocab + 63) / 64);
  BRISK_LAUNCH_CHECK();
}

void take_tokens(int32_t* tokens, const int32_t* from, const int32_t* prev, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  launch(take_tokens_kernel, unsigned((n + 255) / 256), 256, 0, s, tokens, from, prev, n);
  BRISK_LAUNCH_CHECK();
}

}  // namespace brisk::cuda
