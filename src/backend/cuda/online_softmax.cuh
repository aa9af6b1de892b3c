// The online-softmax step of the tensor-core attention kernels (flash attention 2, base 2),
// written once for the prefill and the decode kernel. A warp holds S for 16 query rows as
// m16n8 accumulators: each thread has rows g (elements 0, 1) and g + 8 (elements 2, 3) of
// NT 8-key tiles, the quad of threads that share a row holds its keys between them.
#pragma once

#include <cstdint>

#include "backend/cuda/mma.cuh"

namespace brisk::cuda {

// Folds one tile of masked scores into the running max: rescales the row sums l_run and the
// output accumulators o by exp2(m_old - m_new), and returns in m_use the max to subtract
// from this tile's scores (0 for a row that has seen nothing visible yet).
template <int NT, int OT>
__device__ __forceinline__ void online_softmax_rescale(const float (&s)[NT][4], float (&m_run)[2], float (&l_run)[2],
                                                       float (&o)[OT][4], float (&m_use)[2]) {
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e >> 1] = fmaxf(mx[e >> 1], s[nt][e]);
  float corr[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    const float m_new = fmaxf(m_run[r], mx[r]);
    m_use[r] = m_new == -INFINITY ? 0.f : m_new;
    corr[r] = exp2f(m_run[r] - m_use[r]);
    m_run[r] = m_new;
    l_run[r] *= corr[r];
  }
#pragma unroll
  for (int i = 0; i < OT; ++i) o[i][0] *= corr[0], o[i][1] *= corr[0], o[i][2] *= corr[1], o[i][3] *= corr[1];
}

// P for 16 keys (two 8-key score tiles) as the bf16 A operand of P V: the S accumulators'
// layout is the A operand's, so P never leaves registers. Adds P's row parts to l_run.
__device__ __forceinline__ void softmax_probs_operand(const float (&s0)[4], const float (&s1)[4],
                                                      const float (&m_use)[2], float (&l_run)[2], uint32_t (&a)[4]) {
  float p[8];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    p[e] = exp2f(s0[e] - m_use[e >> 1]);
    p[4 + e] = exp2f(s1[e] - m_use[e >> 1]);
  }
  l_run[0] += p[0] + p[1] + p[4] + p[5];
  l_run[1] += p[2] + p[3] + p[6] + p[7];
  a[0] = pack_bf16(p[0], p[1]);
  a[1] = pack_bf16(p[2], p[3]);
  a[2] = pack_bf16(p[4], p[5]);
  a[3] = pack_bf16(p[6], p[7]);
}

// Row sums across the quad that shares each row, once the walk is over.
__device__ __forceinline__ void softmax_row_sums(float (&l_run)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
  }
}

}  // namespace brisk::cuda
