// The one forward pass every supported architecture runs: a decoder-only block whose
// differences are HParams switches. It calls only Backend ops, so it runs unchanged on any
// backend. A debug hook sees every named intermediate (as llama.cpp's cb(cur, name, il)),
// which makes layer-by-layer comparison against a reference straightforward.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"

namespace brisk {

// Called with (name, layer or -1, device data, rows, cols) after each intermediate.
using DebugHook = std::function<void(const char*, int, const float*, int64_t, int64_t)>;

struct DeviceLayer {
  DeviceWeight attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, post_attn_norm;
  DeviceWeight ffn_norm, w_gate, w_up, w_down, post_ffn_norm;
};

class Transformer {
 public:
  // Uploads the weights to the backend (which may keep pointing into `weights`' memory).
  Transformer(const HParams& hp, WeightSet& weights, Backend& backend);
  ~Transformer();
  Transformer(const Transformer&) = delete;
  Transformer& operator=(const Transformer&) = delete;

  const HParams& hparams() const { return hp_; }
  Backend& backend() { return backend_; }

  KvCache new_kv_cache(int64_t capacity);
  void free_kv_cache(KvCache& kv);

  // Runs n tokens at the given positions (each <= every earlier-written position + 1) and
  // writes the logits of the last token (or of every token when all_logits) to host memory:
  // logits must hold vocab (or n * vocab) floats.
  void forward(const int32_t* tokens, const int32_t* positions, int64_t n, KvCache& kv, float* logits,
               bool all_logits = false);

  void set_debug_hook(DebugHook hook) { hook_ = std::move(hook); }

 private:
  void ensure_scratch(int64_t n);
  void layer(int il, int64_t n, const int32_t* positions, KvCache& kv);
  void cb(const char* name, int il, const float* data, int64_t rows, int64_t cols) {
    if (hook_) hook_(name, il, data, rows, cols);
  }

  HParams hp_;
  Backend& backend_;
  DeviceWeight tok_embd_, output_norm_, output_;
  std::vector<DeviceLayer> layers_;
  std::vector<float> rope_freq_factors_;
  RopeConfig rope_global_, rope_local_;
  DebugHook hook_;

  // Scratch activations sized for the largest batch seen so far.
  int64_t scratch_n_ = 0;
  float *x_ = nullptr, *h_ = nullptr, *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *att_ = nullptr;
  float *o_ = nullptr, *gate_ = nullptr, *up_ = nullptr, *logits_ = nullptr;
};

}  // namespace brisk
