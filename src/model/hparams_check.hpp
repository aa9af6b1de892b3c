// Validation of HParams at load. A checkpoint whose metadata is absurd (a rope base of 0, a NaN
// epsilon, a block count that disagrees with the tensors in the file) is refused here with an
// Error(kFormat) that names the metadata key (GGUF key or config.json field) and its value,
// instead of loading and producing garbage or failing every request later.
#pragma once

#include <cstdint>
#include <string>

#include "model/hparams.hpp"

namespace brisk {

// Where each HParams field came from, as the person fixing the file would search for it.
struct HParamKeys {
  std::string vocab, hidden, n_layers, n_heads, n_kv_heads, head_dim, ffn, context, norm_eps;
  std::string rope_theta, rope_local_theta, sliding_window, query_scale, layer_types;
  std::string rope_scaling;  // a prefix: rope_scaling + "factor" names the linear factor
};

// Ranges and cross-field rules of a filled HParams: counts within caps, kv heads dividing
// heads, an even head dim, finite positive rope/norm/scale parameters, a window for sliding layers.
void check_hparams(const HParams& hp, const HParamKeys& keys, const std::string& where);

// The checkpoint's per-layer tensors (blk.N.* or model.layers.N.*) against the block count, both
// ways: a block without tensors and tensors beyond the last block are errors naming `layers_key`.
void check_layer_tensors(const CheckpointIndex& ckpt, int n_layers, const std::string& layers_key);

// One count from metadata in 1..cap (e.g. a sliding window that is present must be > 0).
void check_count(const std::string& key, int64_t v, int64_t cap, const std::string& where);

// One real from metadata: finite and in (lo, hi].
void check_real(const std::string& key, double v, double lo, double hi, const std::string& where);

// A value read from metadata, narrowed with a range check: errors name the key.
int narrow_int(const std::string& key, int64_t v, const std::string& where);
float narrow_float(double v);  // out-of-range doubles become +-inf, which the checks then refuse

// "1e-06", "nan", "-inf": values as the messages show them.
std::string number_text(double v);

}  // namespace brisk
