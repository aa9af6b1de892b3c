// The arch table: which architectures brisk runs and how each one's metadata (GGUF keys or
// HF config.json fields) becomes HParams. Adding an architecture means adding a row here and,
// if it needs one, a switch in HParams: never a copy of the forward pass.
#include <cmath>
#include <string>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "model/hparams.hpp"

namespace brisk {

namespace {

struct ArchRow {
  Arch arch;
  const char* gguf_name;
  const char* hf_model_types[2];
  bool qkv_bias, qk_norm, post_norms, embed_scale, norm_plus_one_hf;
  Activation act;
  int sliding_pattern;  // every Nth layer global, the rest sliding (GGUF has no per-layer list)
};

const ArchRow kArchs[] = {
    {Arch::Llama, "llama", {"llama", nullptr}, false, false, false, false, false, Activation::SiLU, 0},
    {Arch::Qwen2, "qwen2", {"qwen2", nullptr}, true, false, false, false, false, Activation::SiLU, 0},
    {Arch::Qwen3, "qwen3", {"qwen3", nullptr}, false, true, false, false, false, Activation::SiLU, 0},
    {Arch::Gemma3, "gemma3", {"gemma3_text", "gemma3"}, false, true, true, true, true, Activation::GeluTanh, 6},
};

const ArchRow* find_gguf_arch(const std::string& name) {
  for (const auto& r : kArchs)
    if (name == r.gguf_name) return &r;
  return nullptr;
}

const ArchRow* find_hf_arch(const std::string& model_type) {
  for (const auto& r : kArchs)
    for (const char* t : r.hf_model_types)
      if (t && model_type == t) return &r;
  return nullptr;
}

void apply_row(const ArchRow& row, HParams& hp) {
  hp.arch = row.arch;
  hp.arch_name = row.gguf_name;
  hp.qkv_bias = row.qkv_bias;
  hp.qk_norm = row.qk_norm;
  hp.post_norms = row.post_norms;
  hp.embed_scale = row.embed_scale;
  hp.act = row.act;
}

void check_positive(const std::string& what, int64_t v, int64_t cap, const std::string& where) {
  if (v <= 0 || v > cap)
    throw Error(ErrorCode::kFormat, what + " = " + std::to_string(v) + " is out of range", where);
}

// Shared sanity checks and derived values, once both sources have filled the raw numbers.
void finish(HParams& hp, int sliding_pattern, const std::string& where) {
  check_positive("hidden size", hp.hidden, 1 << 16, where);
  check_positive("layer count", hp.n_layers, 1024, where);
  check_positive("head count", hp.n_heads, 1024, where);
  check_positive("kv head count", hp.n_kv_heads, hp.n_heads, where);
  check_positive("head dim", hp.head_dim, 1024, where);
  check_positive("feed-forward size", hp.ffn, 1 << 20, where);
  check_positive("vocabulary size", hp.vocab, 1 << 24, where);
  if (hp.n_heads % hp.n_kv_heads != 0)
    throw Error(ErrorCode::kFormat, "head count " + std::to_string(hp.n_heads) +
                                        " is not a multiple of the kv head count " + std::to_string(hp.n_kv_heads),
                where);
  if (hp.head_dim % 2 != 0) throw Error(ErrorCode::kFormat, "head dim must be even for rope", where);
  if (hp.context <= 0) hp.context = 4096;
  if (hp.query_scale == 0.f) hp.query_scale = 1.f / std::sqrt(float(hp.head_dim));
  hp.rope.head_dim = hp.rope_local.head_dim = hp.head_dim;
  if (hp.layer_sliding.empty()) {
    hp.layer_sliding.assign(size_t(hp.n_layers), false);
    if (sliding_pattern > 0 && hp.sliding_window > 0)
      for (int i = 0; i < hp.n_layers; ++i) hp.layer_sliding[size_t(i)] = (i + 1) % sliding_pattern != 0;
  }
  if (int(hp.layer_sliding.size()) != hp.n_layers)
    throw Error(ErrorCode::kFormat, "layer type list does not match the layer count", where);
}

// ---- GGUF ----

int64_t gguf_int(const CheckpointIndex& c, const std::string& key, int64_t fallback, bool required) {
  const MetaValue* v = c.meta(key);
  if (!v) {
    if (required) throw Error(ErrorCode::kFormat, "missing metadata key " + key, c.path);
    return fallback;
  }
  if (v->is_array()) {  // per-layer arrays (some converters): all layers must agree here
    if (v->nums.empty()) throw Error(ErrorCode::kFormat, "empty array for " + key, c.path);
    return int64_t(v->nums[0]);
  }
  return v->as_i64();
}

double gguf_float(const CheckpointIndex& c, const std::string& key, double fallback) {
  const MetaValue* v = c.meta(key);
  return v ? v->as_f64() : fallback;
}

HParams from_gguf(const CheckpointIndex& c) {
  const MetaValue* archv = c.meta("general.architecture");
  if (!archv || !archv->is_string()) throw Error(ErrorCode::kFormat, "missing general.architecture", c.path);
  const std::string a = archv->as_string();
  const ArchRow* row = find_gguf_arch(a);
  if (!row)
    throw Error(ErrorCode::kUnsupported,
                "architecture '" + a + "' is not supported (brisk runs llama, qwen2, qwen3, gemma3)", c.path);
  HParams hp;
  apply_row(*row, hp);
  hp.hidden = gguf_int(c, a + ".embedding_length", 0, true);
  hp.n_layers = int(gguf_int(c, a + ".block_count", 0, true));
  hp.n_heads = int(gguf_int(c, a + ".attention.head_count", 0, true));
  hp.n_kv_heads = int(gguf_int(c, a + ".attention.head_count_kv", hp.n_heads, false));
  hp.head_dim = int(gguf_int(c, a + ".attention.key_length", hp.n_heads ? hp.hidden / hp.n_heads : 0, false));
  hp.ffn = gguf_int(c, a + ".feed_forward_length", 0, true);
  hp.context = gguf_int(c, a + ".context_length", 4096, false);
  hp.norm_eps = float(gguf_float(c, a + ".attention.layer_norm_rms_epsilon", 1e-5));
  hp.rope.theta = float(gguf_float(c, a + ".rope.freq_base", 10000.0));
  // llama.cpp's converter permuted q/k of llama-architecture files for interleaved pairs.
  hp.rope.style = row->arch == Arch::Llama ? RopeStyle::Interleaved : RopeStyle::Half;
  if (const MetaValue* st = c.meta(a + ".rope.scaling.type"); st && st->is_string() && st->as_string() == "linear")
    hp.rope.linear_factor = float(gguf_float(c, a + ".rope.scaling.factor", 1.0));
  hp.rope_local = hp.rope;
  if (row->arch == Arch::Gemma3) {
    hp.rope_local.theta = 10000.f;  // fixed for Gemma 3, not stored in GGUF
    hp.rope_local.linear_factor = 1.f;
    hp.sliding_window = int(gguf_int(c, a + ".attention.sliding_window", 0, false));
    // llama.cpp: 27B scales by hidden / heads, the others by head dim.
    hp.query_scale = hp.n_layers == 62 ? 1.f / std::sqrt(float(hp.hidden / hp.n_heads))
                                       : 1.f / std::sqrt(float(hp.head_dim));
  }
  if (const TensorInfo* e = c.find("token_embd.weight"); e && !e->shape.empty()) hp.vocab = e->shape[0];
  hp.tied_embeddings = c.find("output.weight") == nullptr;
  hp.qkv_bias = c.find("blk.0.attn_q.bias") != nullptr;
  hp.qk_norm = c.find("blk.0.attn_q_norm.weight") != nullptr;
  hp.norm_plus_one = false;  // the converter already stored 1 + w
  finish(hp, row->sliding_pattern, c.path);
  return hp;
}

// ---- Hugging Face config.json ----

using json = nlohmann::json;

template <typename T>
T cfg_get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw Error(ErrorCode::kFormat, std::string("config.json field '") + key + "' has the wrong type");
  }
}

// transformers 4.x writes rope_theta / rope_scaling; 5.x writes rope_parameters, per layer
// type for Gemma 3. Returns the parameters object for a layer type, or an empty object.
json rope_params(const json& cfg, const char* layer_type) {
  auto it = cfg.find("rope_parameters");
  if (it == cfg.end() || !it->is_object()) return json::object();
  if (it->contains(layer_type) && (*it)[layer_type].is_object()) return (*it)[layer_type];
  return *it;
}

void apply_rope_scaling(const json& s, RopeConfig& r) {
  if (!s.is_object()) return;
  std::string type = cfg_get<std::string>(s, "rope_type", cfg_get<std::string>(s, "type", "default"));
  if (type == "llama3") {
    r.llama3_factor = cfg_get<float>(s, "factor", 8.f);
    r.llama3_low_freq_factor = cfg_get<float>(s, "low_freq_factor", 1.f);
    r.llama3_high_freq_factor = cfg_get<float>(s, "high_freq_factor", 4.f);
    r.llama3_original_context = cfg_get<int>(s, "original_max_position_embeddings", 8192);
  } else if (type == "linear") {
    r.linear_factor = cfg_get<float>(s, "factor", 1.f);
  } else if (type != "default") {
    throw Error(ErrorCode::kUnsupported, "rope scaling type '" + type + "' is not supported");
  }
}

HParams from_hf(const CheckpointIndex& c) {
  json cfg = c.hf_config;
  if (cfg.contains("text_config") && cfg["text_config"].is_object()) {  // multimodal wrappers
    json text = cfg["text_config"];
    if (!text.contains("model_type")) text["model_type"] = cfg_get<std::string>(cfg, "model_type", "");
    cfg = text;
  }
  const std::string mt = cfg_get<std::string>(cfg, "model_type", "");
  const ArchRow* row = find_hf_arch(mt);
  if (!row)
    throw Error(ErrorCode::kUnsupported,
                "model_type '" + mt + "' is not supported (brisk runs llama, qwen2, qwen3, gemma3)", c.path);
  HParams hp;
  apply_row(*row, hp);
  hp.vocab = cfg_get<int64_t>(cfg, "vocab_size", 0);
  hp.hidden = cfg_get<int64_t>(cfg, "hidden_size", 0);
  hp.n_layers = cfg_get<int>(cfg, "num_hidden_layers", 0);
  hp.n_heads = cfg_get<int>(cfg, "num_attention_heads", 0);
  hp.n_kv_heads = cfg_get<int>(cfg, "num_key_value_heads", hp.n_heads);
  hp.head_dim = cfg_get<int>(cfg, "head_dim", hp.n_heads ? int(hp.hidden / hp.n_heads) : 0);
  hp.ffn = cfg_get<int64_t>(cfg, "intermediate_size", 0);
  hp.context = cfg_get<int64_t>(cfg, "max_position_embeddings", 4096);
  hp.norm_eps = cfg_get<float>(cfg, "rms_norm_eps", 1e-6f);
  hp.tied_embeddings = cfg_get<bool>(cfg, "tie_word_embeddings", row->arch == Arch::Gemma3);
  if (row->arch == Arch::Llama) hp.qkv_bias = cfg_get<bool>(cfg, "attention_bias", false);
  hp.norm_plus_one = row->norm_plus_one_hf;
  hp.rope.style = hp.rope_local.style = RopeStyle::Half;

  json global = rope_params(cfg, "full_attention");
  hp.rope.theta = cfg_get<float>(global, "rope_theta", cfg_get<float>(cfg, "rope_theta", 10000.f));
  apply_rope_scaling(global.empty() ? cfg_get<json>(cfg, "rope_scaling", json()) : global, hp.rope);
  hp.rope_local = hp.rope;
  if (row->arch == Arch::Gemma3) {
    json local = rope_params(cfg, "sliding_attention");
    hp.rope_local = RopeConfig{};
    hp.rope_local.theta = cfg_get<float>(local, "rope_theta", cfg_get<float>(cfg, "rope_local_base_freq", 10000.f));
    hp.sliding_window = cfg_get<int>(cfg, "sliding_window", 0);
    hp.query_scale = 1.f / std::sqrt(cfg_get<float>(cfg, "query_pre_attn_scalar", float(hp.head_dim)));
    std::string act = cfg_get<std::string>(cfg, "hidden_activation", cfg_get<std::string>(cfg, "hidden_act", "gelu_pytorch_tanh"));
    if (act != "gelu_pytorch_tanh" && act != "gelu")
      throw Error(ErrorCode::kUnsupported, "activation '" + act + "' is not supported for gemma3", c.path);
  } else {
    std::string act = cfg_get<std::string>(cfg, "hidden_act", "silu");
    if (act != "silu") throw Error(ErrorCode::kUnsupported, "activation '" + act + "' is not supported", c.path);
  }
  if (auto it = cfg.find("layer_types"); it != cfg.end() && it->is_array()) {
    for (const auto& t : *it) hp.layer_sliding.push_back(t.is_string() && t.get<std::string>() == "sliding_attention");
    if (row->arch != Arch::Gemma3 && !cfg_get<bool>(cfg, "use_sliding_window", false))
      hp.layer_sliding.assign(hp.layer_sliding.size(), false);  // Qwen lists types but has the window off
  }
  int pattern = cfg_get<int>(cfg, "sliding_window_pattern", row->sliding_pattern);
  finish(hp, row->arch == Arch::Gemma3 ? pattern : 0, c.path);
  return hp;
}

}  // namespace

const char* arch_name(Arch arch) {
  for (const auto& r : kArchs)
    if (r.arch == arch) return r.gguf_name;
  return "?";
}

HParams hparams_from_checkpoint(const CheckpointIndex& ckpt) {
  return ckpt.format == "gguf" ? from_gguf(ckpt) : from_hf(ckpt);
}

}  // namespace brisk
