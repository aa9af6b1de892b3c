#include "model/weights.hpp"

#include <cmath>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "quant/quantize.hpp"

namespace brisk {

namespace {

// Role names in both naming schemes; "%" is the layer index.
struct RoleNames {
  const char* gguf;
  const char* hf;
};

std::string with_layer(const char* pattern, int layer) {
  std::string s = pattern;
  auto pos = s.find('%');
  if (pos != std::string::npos) s.replace(pos, 1, std::to_string(layer));
  return s;
}

class Mapper {
 public:
  Mapper(const CheckpointIndex& c, const HParams& hp, WeightSet& ws) : c_(c), hp_(hp), ws_(ws) {
    gguf_ = c.format == "gguf";
    if (!gguf_) {  // multimodal wrappers nest the text model one level down
      for (const char* p : {"model.", "model.language_model.", "language_model.model."})
        if (c.find(std::string(p) + "embed_tokens.weight")) prefix_ = p;
    }
  }

  const TensorInfo* find(const RoleNames& r, int layer) const {
    std::string name = gguf_ ? with_layer(r.gguf, layer) : with_layer(r.hf, layer);
    if (!gguf_ && name.rfind("model.", 0) == 0) name = prefix_ + name.substr(6);
    return c_.find(name);
  }

  // A [rows, cols] matrix that stays in the file mapping.
  WeightView matrix(const RoleNames& r, int layer, int64_t rows, int64_t cols, bool required = true) {
    const TensorInfo* t = find(r, layer);
    if (!t) {
      if (required) throw Error(ErrorCode::kFormat, "missing tensor " + name(r, layer), c_.path);
      return {};
    }
    if (t->shape.size() != 2 || t->shape[0] != rows || t->shape[1] != cols)
      throw Error(ErrorCode::kFormat,
                  "tensor has shape " + shape_string(t->shape) + ", expected [" + std::to_string(rows) + ", " +
                      std::to_string(cols) + "]",
                  t->name);
    if (!dtype_bytes(t->dtype, uint64_t(cols)))
      throw Error(ErrorCode::kFormat, "row length is not a whole number of blocks", t->name);
    WeightView v{t->name, t->dtype, rows, cols, t->data};
    if (t->dtype == DType::I8) v.scales = row_scales(*t, rows);
    return v;
  }

  // The companion tensor of an I8 matrix: float32 [rows] named <name>_scale.
  const float* row_scales(const TensorInfo& t, int64_t rows) {
    const TensorInfo* s = c_.find(t.name + "_scale");
    if (!s) throw Error(ErrorCode::kFormat, "I8 tensor without its " + t.name + "_scale tensor", t.name);
    if (s->dtype != DType::F32 || s->numel() != rows)
      throw Error(ErrorCode::kFormat, "scale tensor must be F32 with one value per row (" + std::to_string(rows) + ")",
                  s->name);
    if (reinterpret_cast<uintptr_t>(s->data) % alignof(float) != 0)
      throw Error(ErrorCode::kFormat, "scale tensor is not 4-byte aligned", s->name);
    return reinterpret_cast<const float*>(s->data);
  }

  // A vector converted to float32 (norm weights get Gemma's 1 + w when HParams asks).
  WeightView vector(const RoleNames& r, int layer, int64_t n, bool required, bool norm) {
    const TensorInfo* t = find(r, layer);
    if (!t) {
      if (required) throw Error(ErrorCode::kFormat, "missing tensor " + name(r, layer), c_.path);
      return {};
    }
    if (t->numel() != n)
      throw Error(ErrorCode::kFormat, "tensor has " + std::to_string(t->numel()) + " elements, expected " +
                                          std::to_string(n), t->name);
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t->dtype, t->data, v.data(), n);
    if (norm && hp_.norm_plus_one)
      for (auto& x : v) x += 1.f;
    ws_.owned.push_back(std::move(v));
    return WeightView{t->name, DType::F32, 1, n, ws_.owned.back().data()};
  }

  std::string name(const RoleNames& r, int layer) const { return with_layer(gguf_ ? r.gguf : r.hf, layer); }

 private:
  const CheckpointIndex& c_;
  const HParams& hp_;
  WeightSet& ws_;
  bool gguf_ = false;
  std::string prefix_ = "model.";
};

const RoleNames kEmbd{"token_embd.weight", "model.embed_tokens.weight"};
const RoleNames kOutNorm{"output_norm.weight", "model.norm.weight"};
const RoleNames kOutput{"output.weight", "lm_head.weight"};
const RoleNames kAttnNorm{"blk.%.attn_norm.weight", "model.layers.%.input_layernorm.weight"};
const RoleNames kWq{"blk.%.attn_q.weight", "model.layers.%.self_attn.q_proj.weight"};
const RoleNames kWk{"blk.%.attn_k.weight", "model.layers.%.self_attn.k_proj.weight"};
const RoleNames kWv{"blk.%.attn_v.weight", "model.layers.%.self_attn.v_proj.weight"};
const RoleNames kWo{"blk.%.attn_output.weight", "model.layers.%.self_attn.o_proj.weight"};
const RoleNames kBq{"blk.%.attn_q.bias", "model.layers.%.self_attn.q_proj.bias"};
const RoleNames kBk{"blk.%.attn_k.bias", "model.layers.%.self_attn.k_proj.bias"};
const RoleNames kBv{"blk.%.attn_v.bias", "model.layers.%.self_attn.v_proj.bias"};
const RoleNames kQNorm{"blk.%.attn_q_norm.weight", "model.layers.%.self_attn.q_norm.weight"};
const RoleNames kKNorm{"blk.%.attn_k_norm.weight", "model.layers.%.self_attn.k_norm.weight"};
const RoleNames kGate{"blk.%.ffn_gate.weight", "model.layers.%.mlp.gate_proj.weight"};
const RoleNames kUp{"blk.%.ffn_up.weight", "model.layers.%.mlp.up_proj.weight"};
const RoleNames kDown{"blk.%.ffn_down.weight", "model.layers.%.mlp.down_proj.weight"};
// HF's "post_attention_layernorm" is the pre-MLP norm in Llama/Qwen but the post-attention
// norm in Gemma 3, whose pre-MLP norm is "pre_feedforward_layernorm".
const RoleNames kFfnNormLlama{"blk.%.ffn_norm.weight", "model.layers.%.post_attention_layernorm.weight"};
const RoleNames kFfnNormGemma{"blk.%.ffn_norm.weight", "model.layers.%.pre_feedforward_layernorm.weight"};
const RoleNames kPostAttnNorm{"blk.%.post_attention_norm.weight", "model.layers.%.post_attention_layernorm.weight"};
const RoleNames kPostFfnNorm{"blk.%.post_ffw_norm.weight", "model.layers.%.post_feedforward_layernorm.weight"};
const RoleNames kRopeFreqs{"rope_freqs.weight", "-"};

}  // namespace

WeightSet map_weights(const CheckpointIndex& ckpt, const HParams& hp) {
  WeightSet ws;
  ws.owned.reserve(size_t(hp.n_layers) * 10 + 4);  // views point into these: never reallocate
  Mapper m(ckpt, hp, ws);
  const int64_t H = hp.hidden, Q = int64_t(hp.n_heads) * hp.head_dim, KV = int64_t(hp.n_kv_heads) * hp.head_dim;
  ws.tok_embd = m.matrix(kEmbd, 0, hp.vocab, H);
  ws.output_norm = m.vector(kOutNorm, 0, H, true, true);
  ws.output = hp.tied_embeddings ? ws.tok_embd : m.matrix(kOutput, 0, hp.vocab, H);
  if (const TensorInfo* rf = m.find(kRopeFreqs, 0)) {
    if (rf->numel() != hp.head_dim / 2 || rf->dtype != DType::F32)
      throw Error(ErrorCode::kFormat, "rope_freqs must hold head_dim / 2 float32 values", rf->name);
    const float* f = reinterpret_cast<const float*>(rf->data);
    ws.rope_freq_factors.assign(f, f + hp.head_dim / 2);
    for (float x : ws.rope_freq_factors)  // divisors of the rotation frequencies
      if (!std::isfinite(x) || x <= 0.f)
        throw Error(ErrorCode::kFormat, "rope_freqs holds " + std::to_string(x) + ": every factor must be finite and > 0",
                    rf->name);
  }
  const bool gemma = hp.arch == Arch::Gemma3;
  for (int i = 0; i < hp.n_layers; ++i) {
    LayerWeights l;
    l.attn_norm = m.vector(kAttnNorm, i, H, true, true);
    l.wq = m.matrix(kWq, i, Q, H);
    l.wk = m.matrix(kWk, i, KV, H);
    l.wv = m.matrix(kWv, i, KV, H);
    l.wo = m.matrix(kWo, i, H, Q);
    if (hp.qkv_bias) {
      l.bq = m.vector(kBq, i, Q, true, false);
      l.bk = m.vector(kBk, i, KV, true, false);
      l.bv = m.vector(kBv, i, KV, true, false);
    }
    if (hp.qk_norm) {
      l.q_norm = m.vector(kQNorm, i, hp.head_dim, true, true);
      l.k_norm = m.vector(kKNorm, i, hp.head_dim, true, true);
    }
    l.ffn_norm = m.vector(gemma ? kFfnNormGemma : kFfnNormLlama, i, H, true, true);
    if (hp.post_norms) {
      l.post_attn_norm = m.vector(kPostAttnNorm, i, H, true, true);
      l.post_ffn_norm = m.vector(kPostFfnNorm, i, H, true, true);
    }
    l.w_gate = m.matrix(kGate, i, hp.ffn, H);
    l.w_up = m.matrix(kUp, i, hp.ffn, H);
    l.w_down = m.matrix(kDown, i, H, hp.ffn);
    ws.layers.push_back(std::move(l));
  }
  return ws;
}

}  // namespace brisk
