// WeightSet: the checkpoint's tensors mapped to their roles in the block. GGUF names
// (blk.N.attn_q.weight) and HF names (model.layers.N.self_attn.q_proj.weight) both land
// here; shapes are checked against HParams so the forward pass can trust them. Small
// vectors (norms, biases) are converted to float32 copies; matrices stay in the mapping.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "model/hparams.hpp"
#include "model/weight_roles.hpp"

namespace brisk {

class CheckpointIndex;

// A layer's views by role (weight_roles.hpp); an absent role has a null view.
using LayerWeights = LayerOf<WeightView>;

struct WeightSet {
  WeightView tok_embd, output_norm, output;
  std::vector<LayerWeights> layers;
  std::vector<std::vector<float>> owned;  // float32 copies behind the vector views
  std::vector<float> rope_freq_factors;   // GGUF rope_freqs, empty when absent
};

WeightSet map_weights(const CheckpointIndex& ckpt, const HParams& hp);

}  // namespace brisk
