#include "model/transformer.hpp"

#include <cmath>

#include "base/error.hpp"

namespace brisk {

// Uploads a layer role by role; each group's matrices go up side by side (one qkv product,
// one gate+up product on backends that fuse them).
DeviceLayer Transformer::upload_layer(const LayerWeights& l) {
  DeviceLayer d;
  for (RoleGroup g : {RoleGroup::Qkv, RoleGroup::GateUp}) {
    const WeightView* views[4];
    Role roles[4];
    int n = 0;
    for (const RoleSpec& r : kLayerRoles)
      if (r.group == g) roles[n] = r.role, views[n++] = &l[r.role];
    DeviceWeight out[4];
    backend_.upload_adjacent(views, n, out);
    for (int i = 0; i < n; ++i) d[roles[i]] = out[i];
  }
  for (const RoleSpec& r : kLayerRoles)
    if (r.group == RoleGroup::None && l[r.role].data) d[r.role] = backend_.upload(l[r.role]);
  return d;
}

Transformer::Transformer(const HParams& hp, WeightSet& ws, Backend& backend) : hp_(hp), backend_(backend) {
  auto up = [&](const WeightView& w) { return w.data ? backend_.upload(w) : DeviceWeight{}; };
  tok_embd_ = up(ws.tok_embd);
  output_norm_ = up(ws.output_norm);
  // A tied head is the embedding table itself: one resident copy.
  output_ = ws.output.data == ws.tok_embd.data ? tok_embd_ : up(ws.output);
  for (const auto& l : ws.layers) layers_.push_back(upload_layer(l));
  rope_freq_factors_ = ws.rope_freq_factors;
  rope_global_ = hp_.rope;
  rope_local_ = hp_.rope_local;
  if (!rope_freq_factors_.empty()) rope_global_.freq_factors = rope_local_.freq_factors = rope_freq_factors_.data();
}

Transformer::~Transformer() {
  for (float* p : {x_, h_, q_, k_, v_, att_, o_, gate_, up_, logits_})
    if (p) backend_.release(p);
  if (step_.tokens) backend_.release_bytes(step_.tokens);
  for (void* p : retired_) backend_.release_bytes(p);
}

uint64_t Transformer::matmul_weight_bytes() const {
  auto b = [](const DeviceWeight& w) { return w.present() ? uint64_t(w.rows) * w.row_bytes + w.aux_bytes : 0; };
  uint64_t total = b(output_.present() ? output_ : tok_embd_);
  for (const auto& l : layers_)
    for (const RoleSpec& r : kLayerRoles)
      if (r.kind == RoleKind::Matrix) total += b(l[r.role]);
  return total;
}

uint64_t Transformer::layer_matmul_params() const {
  auto p = [](const DeviceWeight& w) { return w.present() ? uint64_t(w.rows) * uint64_t(w.cols) : 0; };
  uint64_t total = 0;
  for (const auto& l : layers_)
    for (const RoleSpec& r : kLayerRoles)
      if (r.kind == RoleKind::Matrix) total += p(l[r.role]);
  return total;
}

KvCache Transformer::new_kv_cache(int64_t capacity, int n_seqs, int64_t n_blocks, int block_size) {
  return backend_.alloc_kv(hp_.n_layers, hp_.n_kv_heads, hp_.head_dim, capacity, n_seqs, n_blocks, block_size);
}

void Transformer::check_inputs(const int32_t* tokens, const int32_t* positions, const int32_t* seqs, int64_t n,
                               const KvCache& kv) const {
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= hp_.vocab)
      throw Error(ErrorCode::kInvalidArgument,
                  "token id " + std::to_string(tokens[t]) + " outside the vocabulary of " + std::to_string(hp_.vocab));
    if (positions[t] < 0 || positions[t] >= kv.capacity)
      throw Error(ErrorCode::kLimit, "position " + std::to_string(positions[t]) + " beyond the KV cache of " +
                                         std::to_string(kv.capacity) + " positions");
    if (seqs && (seqs[t] < 0 || seqs[t] >= kv.n_seqs))
      throw Error(ErrorCode::kInternal, "sequence slot " + std::to_string(seqs[t]) + " outside the KV cache");
  }
}

void Transformer::free_kv_cache(KvCache& kv) { backend_.release_kv(kv); }

void Transformer::ensure_scratch(int64_t n) {
  if (n <= scratch_n_) return;
  // A captured step may still point at the old buffers: keep them until the end then.
  const bool keep = backend_.can_capture();
  for (float** p : {&x_, &h_, &q_, &k_, &v_, &att_, &o_, &gate_, &up_, &logits_}) {
    if (*p && keep) retired_.push_back(*p);
    else if (*p) backend_.release(*p);
    *p = nullptr;
  }
  const int64_t qd = int64_t(hp_.n_heads) * hp_.head_dim, kvd = int64_t(hp_.n_kv_heads) * hp_.head_dim;
  x_ = backend_.alloc(n * hp_.hidden);
  h_ = backend_.alloc(n * hp_.hidden);
  q_ = backend_.alloc(n * qd);
  k_ = backend_.alloc(n * kvd);
  v_ = backend_.alloc(n * kvd);
  att_ = backend_.alloc(n * qd);
  o_ = backend_.alloc(n * hp_.hidden);
  gate_ = backend_.alloc(n * hp_.ffn);
  up_ = backend_.alloc(n * hp_.ffn);
  logits_ = backend_.alloc(n * hp_.vocab);
  if (step_.tokens) {
    if (keep) retired_.push_back(step_.tokens);
    else backend_.release_bytes(step_.tokens);
  }
  step_.tokens = static_cast<int32_t*>(backend_.alloc_bytes(uint64_t(n) * 8));
  step_.positions = step_.tokens + n;
  scratch_n_ = n;
}

void Transformer::forward(const int32_t* tokens, const int32_t* positions, int64_t n, KvCache& kv, float* logits,
                          bool all_logits) {
  if (n <= 0) throw Error(ErrorCode::kInvalidArgument, "forward pass over zero tokens");
  check_inputs(tokens, positions, nullptr, n, kv);
  ensure_scratch(n);
  backend_.copy_from_host(tokens, step_.tokens, uint64_t(n) * 4);
  backend_.copy_from_host(positions, step_.positions, uint64_t(n) * 4);
  const float* out = forward_step(StepInputs{step_.tokens, step_.positions, nullptr, true}, n, kv, all_logits);
  backend_.to_host(out, logits, (all_logits ? n : 1) * hp_.vocab);
}

const float* Transformer::forward_step(const StepInputs& in, int64_t n, KvCache& kv, bool all_logits) {
  ensure_scratch(n);
  const int64_t H = hp_.hidden;
  backend_.embed(tok_embd_, in.tokens, n, hp_.embed_scale ? std::sqrt(float(H)) : 1.f, x_);
  cb("inp_embd", -1, x_, n, H);
  for (int il = 0; il < hp_.n_layers; ++il) layer(il, n, in, kv);
  if (!in.logits) return nullptr;

  // Only the rows whose logits are wanted go through the output head.
  int64_t rows = 0;
  if (in.logit_rows) {  // gathered into h_ (embed over the hidden rows as a float32 table)
    DeviceWeight hidden;
    hidden.name = "hidden";
    hidden.rows = n, hidden.cols = H, hidden.row_bytes = uint64_t(H) * 4;
    hidden.data = x_;
    rows = in.n_logit_rows;
    backend_.embed(hidden, in.logit_rows, rows, 1.f, h_);
    backend_.rmsnorm(h_, rows, output_norm_, hp_.norm_eps, h_);
  } else {
    const int64_t first = all_logits ? 0 : n - 1;
    rows = n - first;
    backend_.rmsnorm(x_ + first * H, rows, output_norm_, hp_.norm_eps, h_);
  }
  cb("result_norm", -1, h_, rows, H);
  backend_.matmul(h_, rows, output_, logits_);
  cb("result_output", -1, logits_, rows, hp_.vocab);
  return logits_;
}

void Transformer::layer(int il, int64_t n, const StepInputs& in, KvCache& kv) {
  const DeviceLayer& L = layers_[size_t(il)];
  const int64_t H = hp_.hidden;
  const int hd = hp_.head_dim;
  const bool sliding = hp_.layer_sliding[size_t(il)];

  // Attention.
  backend_.rmsnorm(x_, n, L[Role::AttnNorm], hp_.norm_eps, h_);
  cb("attn_norm", il, h_, n, H);
  const DeviceWeight* qkv[3] = {&L[Role::Wq], &L[Role::Wk], &L[Role::Wv]};
  float* qkv_out[3] = {q_, k_, v_};
  const DeviceWeight* qkv_bias[3] = {L[Role::Bq].present() ? &L[Role::Bq] : nullptr, L[Role::Bk].present() ? &L[Role::Bk] : nullptr,
                                     L[Role::Bv].present() ? &L[Role::Bv] : nullptr};
  const RopeConfig& rope = sliding ? rope_local_ : rope_global_;
  if (!hp_.qk_norm && !hook_) {  // (the fused path leaves no unrotated q/k/v to show a hook)
    backend_.qkv_rope_kv_write(h_, n, qkv, qkv_bias, qkv_out, hp_.n_heads, in.positions, in.seqs, rope, kv, il);
  } else {
    backend_.matmul_multi(h_, n, qkv, qkv_out, qkv_bias, 3);
    cb("Qcur", il, q_, n, int64_t(hp_.n_heads) * hd);
    cb("Kcur", il, k_, n, int64_t(hp_.n_kv_heads) * hd);
    cb("Vcur", il, v_, n, int64_t(hp_.n_kv_heads) * hd);
    if (hp_.qk_norm) {
      backend_.rmsnorm(q_, n * hp_.n_heads, L[Role::QNorm], hp_.norm_eps, q_);
      backend_.rmsnorm(k_, n * hp_.n_kv_heads, L[Role::KNorm], hp_.norm_eps, k_);
      cb("Qcur_normed", il, q_, n, int64_t(hp_.n_heads) * hd);
      cb("Kcur_normed", il, k_, n, int64_t(hp_.n_kv_heads) * hd);
    }
    backend_.rope_kv_write(q_, k_, v_, n, hp_.n_heads, in.positions, in.seqs, rope, kv, il);
  }
  cb("Qcur_rope", il, q_, n, int64_t(hp_.n_heads) * hd);
  cb("Kcur_rope", il, k_, n, int64_t(hp_.n_kv_heads) * hd);
  AttentionConfig ac{hp_.n_heads, hp_.n_kv_heads, hd, hp_.query_scale, sliding ? hp_.sliding_window : 0,
                     in.single_seq || in.seqs == nullptr};
  if (in.n_parts > 1) {
    ac.single_seq = true;
    const int64_t row = int64_t(hp_.n_heads) * hd;
    for (int p = 0; p < in.n_parts; ++p) {
      const int64_t r0 = in.part_starts[p], len = in.part_starts[p + 1] - r0;
      backend_.attention(q_ + r0 * row, kv, il, len, in.positions + r0, in.seqs + r0, ac, att_ + r0 * row);
    }
  } else {
    backend_.attention(q_, kv, il, n, in.positions, in.seqs, ac, att_);
  }
  cb("kqv_out", il, att_, n, int64_t(hp_.n_heads) * hd);
  if (hp_.post_norms) {
    backend_.matmul(att_, n, L[Role::Wo], o_);
    backend_.rmsnorm(o_, n, L[Role::PostAttnNorm], hp_.norm_eps, o_);
    cb("attn_post_norm", il, o_, n, H);
    backend_.add(x_, o_, n * H);
  } else {
    backend_.matmul(att_, n, L[Role::Wo], x_, nullptr, /*accumulate=*/true);  // fused residual
  }
  cb("ffn_inp", il, x_, n, H);

  // MLP.
  backend_.rmsnorm(x_, n, L[Role::FfnNorm], hp_.norm_eps, h_);
  cb("ffn_norm", il, h_, n, H);
  backend_.matmul_gated(h_, n, L[Role::Gate], L[Role::Up], hp_.act, gate_, up_);
  cb("ffn_act", il, gate_, n, hp_.ffn);
  if (hp_.post_norms) {
    backend_.matmul(gate_, n, L[Role::Down], o_);
    backend_.rmsnorm(o_, n, L[Role::PostFfnNorm], hp_.norm_eps, o_);
    cb("ffn_post_norm", il, o_, n, H);
    backend_.add(x_, o_, n * H);
  } else {
    backend_.matmul(gate_, n, L[Role::Down], x_, nullptr, /*accumulate=*/true);
  }
  cb("l_out", il, x_, n, H);
}

}  // namespace brisk
