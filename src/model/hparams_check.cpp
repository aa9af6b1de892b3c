#include "model/hparams_check.hpp"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <set>

#include "base/error.hpp"
#include "format/checkpoint.hpp"

namespace brisk {

namespace {

[[noreturn]] void refuse(const std::string& key, const std::string& value, const std::string& rule,
                         const std::string& where) {
  throw Error(ErrorCode::kFormat, key + " = " + value + ": " + rule, where);
}

void check_rope(const RopeConfig& r, const std::string& theta_key, const std::string& scaling_key,
                const std::string& where) {
  // A base <= 1 gives rotation frequencies >= 1 per position: no position information survives.
  check_real(theta_key, r.theta, 1.0, FLT_MAX, where);
  check_real(scaling_key + "factor", r.linear_factor, 0.0, 1e6, where);
  if (r.llama3_factor == 0.f) return;  // Llama 3 scaling off
  check_real(scaling_key + "factor", r.llama3_factor, 0.0, 1e6, where);
  check_real(scaling_key + "low_freq_factor", r.llama3_low_freq_factor, 0.0, 1e6, where);
  check_real(scaling_key + "high_freq_factor", r.llama3_high_freq_factor, r.llama3_low_freq_factor, 1e6, where);
  check_count(scaling_key + "original_max_position_embeddings", r.llama3_original_context, 1 << 24, where);
}

}  // namespace

void check_count(const std::string& key, int64_t v, int64_t cap, const std::string& where) {
  if (v <= 0 || v > cap) refuse(key, std::to_string(v), "must be in 1.." + std::to_string(cap), where);
}

void check_real(const std::string& key, double v, double lo, double hi, const std::string& where) {
  if (!std::isfinite(v) || v <= lo || v > hi)
    refuse(key, number_text(v), "must be a finite number > " + number_text(lo) + " and <= " + number_text(hi),
           where);
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int narrow_int(const std::string& key, int64_t v, const std::string& where) {
  if (v < INT_MIN || v > INT_MAX) refuse(key, std::to_string(v), "does not fit a 32-bit integer", where);
  return int(v);
}

float narrow_float(double v) {
  if (std::isfinite(v) && std::fabs(v) > double(FLT_MAX)) return v > 0 ? INFINITY : -INFINITY;
  return float(v);
}

void check_hparams(const HParams& hp, const HParamKeys& k, const std::string& where) {
  check_count(k.hidden, hp.hidden, 1 << 16, where);
  check_count(k.n_layers, hp.n_layers, 1024, where);
  check_count(k.n_heads, hp.n_heads, 1024, where);
  check_count(k.n_kv_heads, hp.n_kv_heads, 1024, where);
  check_count(k.head_dim, hp.head_dim, 1024, where);
  check_count(k.ffn, hp.ffn, 1 << 20, where);
  check_count(k.vocab, hp.vocab, 1 << 24, where);
  check_count(k.context, hp.context, 1 << 24, where);
  if (hp.n_kv_heads > hp.n_heads || hp.n_heads % hp.n_kv_heads != 0)
    refuse(k.n_kv_heads, std::to_string(hp.n_kv_heads),
           "the head count (" + k.n_heads + " = " + std::to_string(hp.n_heads) + ") is not a multiple of it", where);
  if (hp.head_dim % 2 != 0) refuse(k.head_dim, std::to_string(hp.head_dim), "must be even for rope", where);
  check_real(k.norm_eps, hp.norm_eps, 0.0, 1e-2, where);
  check_rope(hp.rope, k.rope_theta, k.rope_scaling, where);
  check_rope(hp.rope_local, k.rope_local_theta, k.rope_scaling, where);
  check_real(k.query_scale, hp.query_scale, 0.0, 1e3, where);
  if (hp.layer_sliding.size() != size_t(hp.n_layers))
    refuse(k.layer_types, std::to_string(hp.layer_sliding.size()) + " entries",
           "must list one per layer (" + k.n_layers + " = " + std::to_string(hp.n_layers) + ")", where);
  bool any_sliding = false;
  for (bool s : hp.layer_sliding) any_sliding |= s;
  if (any_sliding || hp.sliding_window != 0) check_count(k.sliding_window, hp.sliding_window, 1 << 24, where);
}

namespace {

// The layer index of a per-layer tensor name ("blk.3.attn_q.weight" with prefix "blk."), or -1.
int64_t layer_of(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  int64_t n = 0;
  size_t i = prefix.size();
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && n < (int64_t(1) << 40); ++i) n = n * 10 + (name[i] - '0');
  return i > prefix.size() && i < name.size() && name[i] == '.' ? n : -1;
}

std::string layer_prefix(const CheckpointIndex& c) {
  if (c.format == "gguf") return "blk.";
  // The text model's layers; multimodal wrappers nest it one level down (a vision tower's
  // encoder layers are named differently and are not counted).
  for (const char* p : {"model.language_model.layers.", "language_model.model.layers."})
    for (const auto& t : c.tensors)
      if (layer_of(t.name, p) >= 0) return p;
  return "model.layers.";
}

}  // namespace

void check_layer_tensors(const CheckpointIndex& c, int n_layers, const std::string& key) {
  const std::string prefix = layer_prefix(c);
  std::set<int64_t> seen;
  for (const auto& t : c.tensors) {
    int64_t layer = layer_of(t.name, prefix);
    if (layer < 0) continue;
    if (layer >= n_layers)
      refuse(key, std::to_string(n_layers), "the file has tensors for layer " + std::to_string(layer) + " (" +
                                                t.name + "), beyond the last layer",
             c.path);
    seen.insert(layer);
  }
  for (int64_t i = 0; i < n_layers; ++i)
    if (!seen.count(i))
      refuse(key, std::to_string(n_layers),
             "the file has no tensors for layer " + std::to_string(i) + " (" + prefix + std::to_string(i) + ".*)",
             c.path);
}

}  // namespace brisk
