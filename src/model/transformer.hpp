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

// A layer's uploaded weights by role; an absent role is not present().
using DeviceLayer = LayerOf<DeviceWeight>;

class Transformer {
 public:
  // Uploads the weights to the backend (which may keep pointing into `weights`' memory).
  Transformer(const HParams& hp, WeightSet& weights, Backend& backend);
  ~Transformer();
  Transformer(const Transformer&) = delete;
  Transformer& operator=(const Transformer&) = delete;

  const HParams& hparams() const { return hp_; }
  Backend& backend() { return backend_; }

  // n_seqs slots of `capacity` positions over a pool of n_blocks blocks of block_size
  // positions (0: a private run of blocks per slot); see KvCache.
  KvCache new_kv_cache(int64_t capacity, int n_seqs = 1, int64_t n_blocks = 0, int block_size = 16);
  void free_kv_cache(KvCache& kv);

  // Runs n tokens of sequence slot 0 at the given positions (each <= every earlier-written
  // position + 1) and writes the logits of the last token (or of every token when all_logits)
  // to host memory: logits must hold vocab (or n * vocab) floats. Inputs are host memory,
  // checked here against the vocabulary and the cache.
  void forward(const int32_t* tokens, const int32_t* positions, int64_t n, KvCache& kv, float* logits,
               bool all_logits = false);

  // The same pass over inputs already in backend memory (checked by the caller), leaving the
  // logits in backend memory: rows of every token when all_logits, else of the last. Makes no
  // allocation once scratch for n tokens exists (reserve), so a backend can capture it.
  const float* forward_step(const StepInputs& in, int64_t n, KvCache& kv, bool all_logits);
  void reserve(int64_t n) { ensure_scratch(n); }

  // Throws unless every token id is in the vocabulary and every position/slot fits kv.
  void check_inputs(const int32_t* tokens, const int32_t* positions, const int32_t* seqs, int64_t n,
                    const KvCache& kv) const;

  void set_debug_hook(DebugHook hook) { hook_ = std::move(hook); }

  // Bytes of the weights every step streams through matmuls (all layers and the output
  // head, as stored on the backend): the numerator of decode's bandwidth fraction.
  uint64_t matmul_weight_bytes() const;
  // Parameters in those matmuls, per layer stack and output head.
  uint64_t layer_matmul_params() const;

 private:
  DeviceLayer upload_layer(const LayerWeights& l);
  void ensure_scratch(int64_t n);
  void layer(int il, int64_t n, const StepInputs& in, KvCache& kv);
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
  StepInputs step_;  // forward()'s copy of its host inputs
  std::vector<void*> retired_;  // outgrown scratch a captured step may still use
};

}  // namespace brisk
