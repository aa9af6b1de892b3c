// WeightSet: the checkpoint's tensors mapped to their roles in the block. GGUF names
// (blk.N.attn_q.weight) and HF names (model.layers.N.self_attn.q_proj.weight) both land
// here; shapes are checked against HParams so the forward pass can trust them. Small
// vectors (norms, biases) are converted to float32 copies; matrices stay in the mapping.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "model/hparams.hpp"

namespace brisk {

class CheckpointIndex;

struct LayerWeights {
  WeightView attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, post_attn_norm;
  WeightView ffn_norm, w_gate, w_up, w_down, post_ffn_norm;
};

struct WeightSet {
  WeightView tok_embd, output_norm, output;
  std::vector<LayerWeights> layers;
  std::vector<std::vector<float>> owned;  // float32 copies behind the vector views
  std::vector<float> rope_freq_factors;   // GGUF rope_freqs, empty when absent
};

WeightSet map_weights(const CheckpointIndex& ckpt, const HParams& hp);

// Every (role name, view) of a weight set, in a fixed order, for upload and inspection.
template <typename Fn>
void for_each_weight(WeightSet& ws, Fn&& fn) {
  fn(ws.tok_embd);
  fn(ws.output_norm);
  fn(ws.output);
  for (auto& l : ws.layers)
    for (WeightView* w : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm,
                          &l.post_attn_norm, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down, &l.post_ffn_norm})
      fn(*w);
}

}  // namespace brisk
