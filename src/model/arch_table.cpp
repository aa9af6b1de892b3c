// The arch table: which architectures brisk runs and how each one's metadata (GGUF keys or
// HF config.json fields) becomes HParams. Adding an architecture means adding a row here and,
// if it needs one, a switch in HParams: never a copy of the forward pass.
#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "model/hparams.hpp"
#include "model/hparams_check.hpp"

namespace brisk {

namespace {

struct ArchRow {
  Arch arch;
  const char* gguf_name;
  const char* hf_model_types[2];
  bool qkv_bias, qk_norm, post_norms, embed_scale, norm_plus_one_hf;
  Activation act;
  int sliding_pattern;  // every Nth layer global, the rest sliding (GGUF has no per-layer list)
  const char* chat_template;  // the built-in chat template for a checkpoint that carries none
};

const ArchRow kArchs[] = {
    {Arch::Llama, "llama", {"llama", nullptr}, false, false, false, false, false, Activation::SiLU, 0, "llama3"},
    {Arch::Qwen2, "qwen2", {"qwen2", nullptr}, true, false, false, false, false, Activation::SiLU, 0, "qwen2.5"},
    {Arch::Qwen3, "qwen3", {"qwen3", nullptr}, false, true, false, false, false, Activation::SiLU, 0, "qwen3"},
    {Arch::Gemma3, "gemma3", {"gemma3_text", "gemma3"}, false, true, true, true, true, Activation::GeluTanh, 6, "gemma3"},
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

// Derived values once a source has filled the raw numbers, then every check.
void finish(HParams& hp, int sliding_pattern, const HParamKeys& keys, const CheckpointIndex& c) {
  if (hp.query_scale == 0.f && hp.head_dim > 0) hp.query_scale = 1.f / std::sqrt(float(hp.head_dim));
  hp.rope.head_dim = hp.rope_local.head_dim = hp.head_dim;
  if (hp.layer_sliding.empty() && hp.n_layers > 0 && hp.n_layers <= 1024) {
    hp.layer_sliding.assign(size_t(hp.n_layers), false);
    if (sliding_pattern > 0 && hp.sliding_window > 0)
      for (int i = 0; i < hp.n_layers; ++i) hp.layer_sliding[size_t(i)] = (i + 1) % sliding_pattern != 0;
  }
  check_hparams(hp, keys, c.path);
  check_layer_tensors(c, hp.n_layers, keys.n_layers);
}

// A logit softcap brisk does not apply: refused rather than ignored (outputs would differ).
void refuse_softcap(const std::string& key, double v, const std::string& where) {
  if (!std::isfinite(v) || v <= 0)
    throw Error(ErrorCode::kFormat, key + " = " + number_text(v) + ": must be a finite number > 0", where);
  throw Error(ErrorCode::kUnsupported, key + " = " + number_text(v) + ": brisk does not apply logit softcapping",
              where);
}

// ---- GGUF ----

struct GgufMeta {
  const CheckpointIndex& c;

  const MetaValue* find(const std::string& key, bool required) const {
    const MetaValue* v = c.meta(key);
    if (!v && required) throw Error(ErrorCode::kFormat, "missing metadata key " + key, c.path);
    return v;
  }

  // An integer; a per-layer array (some converters) must hold the same value for every layer.
  int64_t integer(const std::string& key, int64_t fallback, bool required) const {
    const MetaValue* v = find(key, required);
    if (!v) return fallback;
    try {
      if (!v->is_array()) return v->as_i64();
      if (v->nums.empty()) throw Error(ErrorCode::kFormat, "empty array");
      for (double x : v->nums)
        if (x != v->nums[0])
          throw Error(ErrorCode::kUnsupported, key + " differs between layers; brisk needs one value", c.path);
      MetaValue first;
      first.type = MetaType::F64;
      first.f = v->nums[0];
      return first.as_i64();
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kUnsupported) throw;
      throw Error(ErrorCode::kFormat, key + ": " + e.message(), c.path);
    }
  }

  double real(const std::string& key, double fallback) const {
    const MetaValue* v = c.meta(key);
    if (!v) return fallback;
    if (!v->is_number()) throw Error(ErrorCode::kFormat, key + ": metadata value is not a number", c.path);
    return v->as_f64();
  }

  int count(const std::string& key, int64_t fallback, bool required) const {
    return narrow_int(key, integer(key, fallback, required), c.path);
  }
};

HParamKeys gguf_keys(const std::string& a) {
  HParamKeys k;
  k.vocab = "token_embd.weight rows";
  k.hidden = a + ".embedding_length";
  k.n_layers = a + ".block_count";
  k.n_heads = a + ".attention.head_count";
  k.n_kv_heads = a + ".attention.head_count_kv";
  k.head_dim = a + ".attention.key_length";
  k.ffn = a + ".feed_forward_length";
  k.context = a + ".context_length";
  k.norm_eps = a + ".attention.layer_norm_rms_epsilon";
  k.rope_theta = a + ".rope.freq_base";
  k.rope_local_theta = a + ".rope.freq_base_swa";
  k.rope_scaling = a + ".rope.scaling.";
  k.sliding_window = a + ".attention.sliding_window";
  k.query_scale = k.head_dim;  // derived from the head dim (or hidden / heads)
  k.layer_types = k.n_layers;
  return k;
}

void gguf_rope(const GgufMeta& m, const HParamKeys& k, const ArchRow& row, HParams& hp) {
  hp.rope.theta = narrow_float(m.real(k.rope_theta, 10000.0));
  // llama.cpp's converter permuted q/k of llama-architecture files for interleaved pairs.
  hp.rope.style = row.arch == Arch::Llama ? RopeStyle::Interleaved : RopeStyle::Half;
  if (const MetaValue* st = m.c.meta(k.rope_scaling + "type")) {
    const std::string type = st->is_string() ? st->as_string() : "?";
    if (type == "linear") hp.rope.linear_factor = narrow_float(m.real(k.rope_scaling + "factor", 1.0));
    else if (type != "none")
      throw Error(ErrorCode::kUnsupported, k.rope_scaling + "type = " + type + ": brisk supports none and linear",
                  m.c.path);
  }
  hp.rope_local = hp.rope;
  if (row.arch == Arch::Gemma3) {  // Gemma 3's sliding layers: their own base, no scaling
    hp.rope_local.theta = narrow_float(m.real(k.rope_local_theta, 10000.0));
    hp.rope_local.linear_factor = 1.f;
  }
}

void gguf_attention_extras(const GgufMeta& m, const HParamKeys& k, const ArchRow& row, HParams& hp) {
  const std::string a = row.gguf_name;
  for (const char* cap : {".attn_logit_softcapping", ".final_logit_softcapping"})
    if (m.c.meta(a + cap)) refuse_softcap(a + cap, m.real(a + cap, 0), m.c.path);
  if (row.arch != Arch::Gemma3) return;
  hp.sliding_window = m.count(k.sliding_window, 0, true);
  check_count(k.sliding_window, hp.sliding_window, 1 << 24, m.c.path);
  // llama.cpp: 27B scales by hidden / heads, the others by head dim.
  if (hp.n_layers == 62 && hp.n_heads > 0 && hp.hidden / hp.n_heads > 0)
    hp.query_scale = 1.f / std::sqrt(float(hp.hidden / hp.n_heads));
}

void gguf_vocab(const GgufMeta& m, const std::string& a, HParams& hp) {
  const TensorInfo* e = m.c.find("token_embd.weight");
  if (!e || e->shape.size() != 2) throw Error(ErrorCode::kFormat, "missing tensor token_embd.weight [vocab, hidden]", m.c.path);
  hp.vocab = e->shape[0];
  if (int64_t n = m.integer(a + ".vocab_size", hp.vocab, false); n != hp.vocab)
    throw Error(ErrorCode::kFormat, a + ".vocab_size = " + std::to_string(n) + ": token_embd.weight has " +
                                        std::to_string(hp.vocab) + " rows", m.c.path);
}

// Head shapes brisk does not run, checked once the head dim itself is known to be sane:
// values of another size than keys, rope over only part of each head.
void gguf_head_shapes(const GgufMeta& m, const HParamKeys& k, const std::string& a, const HParams& hp) {
  const std::string value_length = a + ".attention.value_length";
  if (int64_t v = m.integer(value_length, hp.head_dim, false); v != hp.head_dim)
    throw Error(ErrorCode::kUnsupported, value_length + " = " + std::to_string(v) + ": differs from " + k.head_dim +
                                             " = " + std::to_string(hp.head_dim), m.c.path);
  if (int64_t dims = m.integer(a + ".rope.dimension_count", hp.head_dim, false); dims != hp.head_dim)
    throw Error(ErrorCode::kUnsupported,
                a + ".rope.dimension_count = " + std::to_string(dims) + ": brisk rotates whole heads (" +
                    k.head_dim + " = " + std::to_string(hp.head_dim) + ")",
                m.c.path);
}

const ArchRow& gguf_row(const CheckpointIndex& c) {
  const MetaValue* archv = c.meta("general.architecture");
  if (!archv || !archv->is_string()) throw Error(ErrorCode::kFormat, "missing general.architecture", c.path);
  const std::string a = archv->as_string();
  const ArchRow* row = find_gguf_arch(a);
  if (!row)
    throw Error(ErrorCode::kUnsupported,
                "architecture '" + a + "' is not supported (brisk runs llama, qwen2, qwen3, gemma3)", c.path);
  return *row;
}

HParams from_gguf(const CheckpointIndex& c) {
  const ArchRow& row = gguf_row(c);
  const std::string a = row.gguf_name;
  const GgufMeta m{c};
  const HParamKeys k = gguf_keys(a);
  HParams hp;
  apply_row(row, hp);
  hp.hidden = m.integer(k.hidden, 0, true);
  hp.n_layers = m.count(k.n_layers, 0, true);
  hp.n_heads = m.count(k.n_heads, 0, true);
  hp.n_kv_heads = m.count(k.n_kv_heads, hp.n_heads, false);
  hp.head_dim = m.count(k.head_dim, hp.n_heads > 0 ? hp.hidden / hp.n_heads : 0, false);
  hp.ffn = m.integer(k.ffn, 0, true);
  hp.context = m.integer(k.context, 4096, false);
  hp.norm_eps = narrow_float(m.real(k.norm_eps, 1e-5));
  gguf_rope(m, k, row, hp);
  gguf_attention_extras(m, k, row, hp);
  gguf_vocab(m, a, hp);
  hp.tied_embeddings = c.find("output.weight") == nullptr;
  hp.qkv_bias = c.find("blk.0.attn_q.bias") != nullptr;
  hp.qk_norm = c.find("blk.0.attn_q_norm.weight") != nullptr;
  hp.norm_plus_one = false;  // the converter already stored 1 + w
  finish(hp, row.sliding_pattern, k, c);
  gguf_head_shapes(m, k, a, hp);
  return hp;
}

// ---- Hugging Face config.json ----

using json = nlohmann::json;

// A config.json object and the path its fields are named by in errors ("text_config.").
struct HfConfig {
  const json& j;
  std::string prefix;
  const std::string& where;

  std::string key(const char* name) const { return prefix + name; }
  const json* find(const char* name) const {
    auto it = j.find(name);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void wrong_type(const char* name, const char* want) const {
    throw Error(ErrorCode::kFormat, "config.json field '" + key(name) + "' has the wrong type (want " + want + ")",
                where);
  }
  // An integer (a whole float is accepted: some exporters write 4096.0).
  int64_t integer(const char* name, int64_t fallback) const {
    const json* v = find(name);
    if (!v) return fallback;
    if (v->is_number_integer()) {
      if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)) wrong_type(name, "a 64-bit integer");
      return v->get<int64_t>();
    }
    if (v->is_number_float()) {
      double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return int64_t(d);
    }
    wrong_type(name, "an integer");
  }
  int count(const char* name, int64_t fallback) const { return narrow_int(key(name), integer(name, fallback), where); }
  template <typename T>
  T get(const char* name, T fallback) const {
    const json* v = find(name);
    if (!v) return fallback;
    try {
      return v->get<T>();
    } catch (const json::exception&) {
      wrong_type(name, "another type");
    }
  }
  double real(const char* name, double fallback) const {
    const json* v = find(name);
    if (!v) return fallback;
    if (!v->is_number()) wrong_type(name, "a number");
    return v->get<double>();
  }
};

const json kNoObject = json::object();

// transformers 4.x writes rope_theta / rope_scaling; 5.x writes rope_parameters, per layer
// type for Gemma 3. The parameters for a layer type, or an empty object.
HfConfig rope_params(const HfConfig& cfg, const char* layer_type) {
  const json* p = cfg.find("rope_parameters");
  if (!p || !p->is_object()) return {kNoObject, cfg.key("rope_parameters."), cfg.where};
  if (p->contains(layer_type) && p->at(layer_type).is_object())
    return {p->at(layer_type), cfg.key("rope_parameters.") + layer_type + ".", cfg.where};
  return {*p, cfg.key("rope_parameters."), cfg.where};
}

void hf_rope_scaling(const HfConfig& s, RopeConfig& r) {
  if (!s.j.is_object() || s.j.empty()) return;
  const std::string type = s.get<std::string>("rope_type", s.get<std::string>("type", "default"));
  if (type == "llama3") {
    r.llama3_factor = narrow_float(s.real("factor", 8.0));
    check_real(s.key("factor"), r.llama3_factor, 0.0, 1e6, s.where);  // 0 would mean "off"
    r.llama3_low_freq_factor = narrow_float(s.real("low_freq_factor", 1.0));
    r.llama3_high_freq_factor = narrow_float(s.real("high_freq_factor", 4.0));
    r.llama3_original_context = s.count("original_max_position_embeddings", 8192);
  } else if (type == "linear") {
    r.linear_factor = narrow_float(s.real("factor", 1.0));
  } else if (type != "default") {
    throw Error(ErrorCode::kUnsupported, s.key("rope_type") + " = " + type + ": not supported", s.where);
  }
}

// Global rope: theta and scaling from rope_parameters (5.x) or the top level (4.x).
void hf_rope(const HfConfig& cfg, HParams& hp, HParamKeys& k) {
  const HfConfig global = rope_params(cfg, "full_attention");
  const HfConfig& theta_src = global.find("rope_theta") ? global : cfg;
  hp.rope.theta = narrow_float(theta_src.real("rope_theta", 10000.0));
  k.rope_theta = theta_src.key("rope_theta");
  const json* legacy = cfg.find("rope_scaling");
  const HfConfig scaling = !global.j.empty() ? global
                           : legacy        ? HfConfig{*legacy, cfg.key("rope_scaling."), cfg.where}
                                           : HfConfig{kNoObject, cfg.key("rope_scaling."), cfg.where};
  hf_rope_scaling(scaling, hp.rope);
  k.rope_scaling = scaling.prefix;
  hp.rope.style = RopeStyle::Half;
  hp.rope_local = hp.rope;
  k.rope_local_theta = k.rope_theta;
}

void hf_gemma3(const HfConfig& cfg, HParams& hp, HParamKeys& k) {
  const HfConfig local = rope_params(cfg, "sliding_attention");
  const HfConfig& theta_src = local.find("rope_theta") ? local : cfg;
  const char* theta_name = local.find("rope_theta") ? "rope_theta" : "rope_local_base_freq";
  hp.rope_local = RopeConfig{};
  hp.rope_local.theta = narrow_float(theta_src.real(theta_name, 10000.0));
  k.rope_local_theta = theta_src.key(theta_name);
  hp.sliding_window = cfg.count("sliding_window", 4096);  // transformers' Gemma3TextConfig default
  check_count(k.sliding_window, hp.sliding_window, 1 << 24, cfg.where);
  const double scalar = cfg.real("query_pre_attn_scalar", double(hp.head_dim));
  check_real(k.query_scale, scalar, 0.0, 1e6, cfg.where);
  hp.query_scale = narrow_float(1.0 / std::sqrt(scalar));
  const std::string act = cfg.get<std::string>("hidden_activation", cfg.get<std::string>("hidden_act", "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && act != "gelu")
    throw Error(ErrorCode::kUnsupported, cfg.key("hidden_activation") + " = " + act + ": not supported for gemma3",
                cfg.where);
}

// layer_types (sliding or full per layer) and, for Qwen, whether the window is on at all.
void hf_layer_types(const HfConfig& cfg, const ArchRow& row, HParams& hp) {
  const bool gemma = row.arch == Arch::Gemma3;
  const bool window_on = gemma || cfg.get<bool>("use_sliding_window", false);
  if (!gemma && window_on) hp.sliding_window = cfg.count("sliding_window", 0);
  const json* types = cfg.find("layer_types");
  if (!types || !types->is_array()) {
    if (!gemma && window_on)
      throw Error(ErrorCode::kUnsupported, cfg.key("use_sliding_window") + " = true without " +
                                               cfg.key("layer_types") + ": brisk needs the per-layer list", cfg.where);
    return;
  }
  for (const auto& t : *types) {
    const std::string s = t.is_string() ? t.get<std::string>() : t.dump();
    if (s != "sliding_attention" && s != "full_attention")
      throw Error(ErrorCode::kUnsupported, cfg.key("layer_types") + " has '" + s + "': brisk runs full_attention and sliding_attention layers", cfg.where);
    hp.layer_sliding.push_back(window_on && s == "sliding_attention");  // Qwen lists types with the window off
  }
}

HParamKeys hf_keys(const HfConfig& cfg) {
  HParamKeys k;
  k.vocab = cfg.key("vocab_size");
  k.hidden = cfg.key("hidden_size");
  k.n_layers = cfg.key("num_hidden_layers");
  k.n_heads = cfg.key("num_attention_heads");
  k.n_kv_heads = cfg.key("num_key_value_heads");
  k.head_dim = cfg.key("head_dim");
  k.ffn = cfg.key("intermediate_size");
  k.context = cfg.key("max_position_embeddings");
  k.norm_eps = cfg.key("rms_norm_eps");
  k.sliding_window = cfg.key("sliding_window");
  k.query_scale = cfg.key("query_pre_attn_scalar");
  k.layer_types = cfg.key("layer_types");
  return k;
}

void hf_check_embedding_rows(const CheckpointIndex& c, const HParams& hp, const HParamKeys& k) {
  for (const char* name : {"model.embed_tokens.weight", "model.language_model.embed_tokens.weight",
                           "language_model.model.embed_tokens.weight"})
    if (const TensorInfo* e = c.find(name); e && !e->shape.empty() && e->shape[0] != hp.vocab)
      throw Error(ErrorCode::kFormat, k.vocab + " = " + std::to_string(hp.vocab) + ": the embedding " + name +
                                          " has " + std::to_string(e->shape[0]) + " rows", c.path);
}

HParams from_hf(const CheckpointIndex& c) {
  json top = c.hf_config;
  const bool nested = top.contains("text_config") && top["text_config"].is_object();  // multimodal wrappers
  json text = nested ? top["text_config"] : top;
  if (nested && !text.contains("model_type")) text["model_type"] = top.value("model_type", "");
  const HfConfig cfg{text, nested ? "text_config." : "", c.path};
  const std::string mt = cfg.get<std::string>("model_type", "");
  const ArchRow* row = find_hf_arch(mt);
  if (!row)
    throw Error(ErrorCode::kUnsupported,
                "model_type '" + mt + "' is not supported (brisk runs llama, qwen2, qwen3, gemma3)", c.path);
  HParamKeys k = hf_keys(cfg);
  HParams hp;
  apply_row(*row, hp);
  hp.vocab = cfg.integer("vocab_size", 0);
  hp.hidden = cfg.integer("hidden_size", 0);
  hp.n_layers = cfg.count("num_hidden_layers", 0);
  hp.n_heads = cfg.count("num_attention_heads", 0);
  hp.n_kv_heads = cfg.count("num_key_value_heads", hp.n_heads);
  hp.head_dim = cfg.count("head_dim", hp.n_heads > 0 ? hp.hidden / hp.n_heads : 0);
  hp.ffn = cfg.integer("intermediate_size", 0);
  hp.context = cfg.integer("max_position_embeddings", 4096);
  hp.norm_eps = narrow_float(cfg.real("rms_norm_eps", 1e-6));
  hp.tied_embeddings = cfg.get<bool>("tie_word_embeddings", row->arch == Arch::Gemma3);
  if (row->arch == Arch::Llama) hp.qkv_bias = cfg.get<bool>("attention_bias", false);
  hp.norm_plus_one = row->norm_plus_one_hf;
  for (const char* cap : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (cfg.find(cap)) refuse_softcap(cfg.key(cap), cfg.real(cap, 0), c.path);
  hf_rope(cfg, hp, k);
  if (row->arch == Arch::Gemma3) {
    hf_gemma3(cfg, hp, k);
  } else if (std::string act = cfg.get<std::string>("hidden_act", "silu"); act != "silu") {
    throw Error(ErrorCode::kUnsupported, cfg.key("hidden_act") + " = " + act + ": not supported", c.path);
  }
  hf_layer_types(cfg, *row, hp);
  const int pattern = cfg.count("sliding_window_pattern", row->sliding_pattern);
  finish(hp, row->arch == Arch::Gemma3 ? pattern : 0, k, c);
  hf_check_embedding_rows(c, hp, k);
  return hp;
}

}  // namespace

HParams arch_switches(const std::string& gguf_arch) {
  const ArchRow* row = find_gguf_arch(gguf_arch);
  if (!row) throw Error(ErrorCode::kUnsupported, "architecture '" + gguf_arch + "' is not supported");
  HParams hp;
  apply_row(*row, hp);
  return hp;
}

const char* arch_name(Arch arch) {
  for (const auto& r : kArchs)
    if (r.arch == arch) return r.gguf_name;
  return "?";
}

const char* default_chat_template(Arch arch) {
  for (const auto& r : kArchs)
    if (r.arch == arch) return r.chat_template;
  return "chatml";
}

HParams hparams_from_checkpoint(const CheckpointIndex& ckpt) {
  return ckpt.format == "gguf" ? from_gguf(ckpt) : from_hf(ckpt);
}

}  // namespace brisk
