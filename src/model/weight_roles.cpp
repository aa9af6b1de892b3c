#include "model/weight_roles.hpp"

namespace brisk {

using K = RoleKind;
using D = RoleDim;
using When = RoleWhen;
using G = RoleGroup;

// HF's "post_attention_layernorm" is the pre-MLP norm in Llama/Qwen but the post-attention
// norm in Gemma 3, whose pre-MLP norm is "pre_feedforward_layernorm".
const std::array<RoleSpec, kLayerRoleCount> kLayerRoles{{
    {Role::AttnNorm, K::Norm, D::One, D::Hidden, When::Always, G::None, "blk.%.attn_norm.weight",
     "model.layers.%.input_layernorm.weight", nullptr},
    {Role::Wq, K::Matrix, D::QWidth, D::Hidden, When::Always, G::Qkv, "blk.%.attn_q.weight",
     "model.layers.%.self_attn.q_proj.weight", nullptr},
    {Role::Wk, K::Matrix, D::KvWidth, D::Hidden, When::Always, G::Qkv, "blk.%.attn_k.weight",
     "model.layers.%.self_attn.k_proj.weight", nullptr},
    {Role::Wv, K::Matrix, D::KvWidth, D::Hidden, When::Always, G::Qkv, "blk.%.attn_v.weight",
     "model.layers.%.self_attn.v_proj.weight", nullptr},
    {Role::Wo, K::Matrix, D::Hidden, D::QWidth, When::Always, G::None, "blk.%.attn_output.weight",
     "model.layers.%.self_attn.o_proj.weight", nullptr},
    {Role::Bq, K::Bias, D::One, D::QWidth, When::QkvBias, G::None, "blk.%.attn_q.bias",
     "model.layers.%.self_attn.q_proj.bias", nullptr},
    {Role::Bk, K::Bias, D::One, D::KvWidth, When::QkvBias, G::None, "blk.%.attn_k.bias",
     "model.layers.%.self_attn.k_proj.bias", nullptr},
    {Role::Bv, K::Bias, D::One, D::KvWidth, When::QkvBias, G::None, "blk.%.attn_v.bias",
     "model.layers.%.self_attn.v_proj.bias", nullptr},
    {Role::QNorm, K::Norm, D::One, D::HeadDim, When::QkNorm, G::None, "blk.%.attn_q_norm.weight",
     "model.layers.%.self_attn.q_norm.weight", nullptr},
    {Role::KNorm, K::Norm, D::One, D::HeadDim, When::QkNorm, G::None, "blk.%.attn_k_norm.weight",
     "model.layers.%.self_attn.k_norm.weight", nullptr},
    {Role::PostAttnNorm, K::Norm, D::One, D::Hidden, When::PostNorms, G::None, "blk.%.post_attention_norm.weight",
     "model.layers.%.post_attention_layernorm.weight", nullptr},
    {Role::FfnNorm, K::Norm, D::One, D::Hidden, When::Always, G::None, "blk.%.ffn_norm.weight",
     "model.layers.%.post_attention_layernorm.weight", "model.layers.%.pre_feedforward_layernorm.weight"},
    {Role::Gate, K::Matrix, D::Ffn, D::Hidden, When::Always, G::GateUp, "blk.%.ffn_gate.weight",
     "model.layers.%.mlp.gate_proj.weight", nullptr},
    {Role::Up, K::Matrix, D::Ffn, D::Hidden, When::Always, G::GateUp, "blk.%.ffn_up.weight",
     "model.layers.%.mlp.up_proj.weight", nullptr},
    {Role::Down, K::Matrix, D::Hidden, D::Ffn, When::Always, G::None, "blk.%.ffn_down.weight",
     "model.layers.%.mlp.down_proj.weight", nullptr},
    {Role::PostFfnNorm, K::Norm, D::One, D::Hidden, When::PostNorms, G::None, "blk.%.post_ffw_norm.weight",
     "model.layers.%.post_feedforward_layernorm.weight", nullptr},
}};

int64_t role_extent(RoleDim d, const HParams& hp) {
  switch (d) {
    case D::One: return 1;
    case D::Hidden: return hp.hidden;
    case D::QWidth: return int64_t(hp.n_heads) * hp.head_dim;
    case D::KvWidth: return int64_t(hp.n_kv_heads) * hp.head_dim;
    case D::HeadDim: return hp.head_dim;
    case D::Ffn: return hp.ffn;
  }
  return 0;
}

bool role_present(const RoleSpec& r, const HParams& hp) {
  switch (r.when) {
    case When::Always: return true;
    case When::QkvBias: return hp.qkv_bias;
    case When::QkNorm: return hp.qk_norm;
    case When::PostNorms: return hp.post_norms;
  }
  return false;
}

std::string role_tensor_name(const RoleSpec& r, int layer, bool gguf, bool gemma_names) {
  std::string s = gguf ? r.gguf : (gemma_names && r.hf_gemma ? r.hf_gemma : r.hf);
  if (auto pos = s.find('%'); pos != std::string::npos) s.replace(pos, 1, std::to_string(layer));
  return s;
}

}  // namespace brisk
