#include "model/weights.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "quant/quantize.hpp"

namespace brisk {

namespace {

class Mapper {
 public:
  Mapper(const CheckpointIndex& c, const HParams& hp, WeightSet& ws)
      : c_(c), hp_(hp), ws_(ws), qcfg_(quantization_config(c)) {
    gguf_ = c.format == "gguf";
    if (!gguf_) {  // multimodal wrappers nest the text model one level down
      for (const char* p : {"model.", "model.language_model.", "language_model.model."})
        if (c.find(std::string(p) + "embed_tokens.weight")) prefix_ = p;
    }
  }

  // The checkpoint's name for a role: HF names get the text model's prefix.
  std::string name(std::string n) const {
    if (!gguf_ && n.rfind("model.", 0) == 0) n = prefix_ + n.substr(6);
    return n;
  }
  std::string name(const ModelTensorNames& r) const { return name(gguf_ ? r.gguf : r.hf); }
  std::string name(const RoleSpec& r, int layer) const {
    return name(role_tensor_name(r, layer, gguf_, hp_.arch == Arch::Gemma3));
  }

  // A [rows, cols] matrix that stays in the file mapping.
  WeightView matrix(const std::string& name, int64_t rows, int64_t cols) {
    const TensorInfo* t = c_.find(name);
    if (!t) throw Error(ErrorCode::kFormat, "missing tensor " + name, c_.path);
    if (t->shape.size() != 2 || t->shape[0] != rows || t->shape[1] != cols)
      throw Error(ErrorCode::kFormat,
                  "tensor has shape " + shape_string(t->shape) + ", expected [" + std::to_string(rows) + ", " +
                      std::to_string(cols) + "]",
                  t->name);
    if (!dtype_bytes(t->dtype, uint64_t(cols)))
      throw Error(ErrorCode::kFormat, "row length is not a whole number of blocks", t->name);
    WeightView v{t->name, t->dtype, rows, cols, t->data};
    if (t->dtype == DType::I8) v.scales = row_scales(*t, rows);
    if (t->dtype == DType::F8_E4M3) {
      fp8_scales(*t, rows, cols, v);
      v.input_scale = fp8_input_scale(*t);
    }
    return v;
  }

  // FP8's scales: <name>_scale, one per tensor or per row (compressed-tensors' layouts, and
  // brisk quantize's), or <name>_scale_inv, one per block of the config's weight_block_size
  // (the block-scaled layout of Qwen3's and DeepSeek's FP8 releases; the weight is value x
  // scale_inv, the name notwithstanding), expanded to one row of block scales per row.
  void fp8_scales(const TensorInfo& t, int64_t rows, int64_t cols, WeightView& v) {
    if (const TensorInfo* s = c_.find(t.name + "_scale")) {
      std::vector<float> f = scale_floats(*s);
      if (f.size() == 1) f.assign(size_t(rows), f[0]);
      if (int64_t(f.size()) != rows)
        throw Error(ErrorCode::kFormat, "FP8 scale tensor must hold one value per tensor or per row (" +
                                            std::to_string(rows) + "), not " + std::to_string(f.size()), s->name);
      v.scales = own(std::move(f));
      return;
    }
    const TensorInfo* s = c_.find(t.name + "_scale_inv");
    if (!s) throw Error(ErrorCode::kFormat, "F8_E4M3 tensor without its _scale or _scale_inv tensor", t.name);
    const auto [br, bc] = fp8_block_size();
    const int64_t gr = (rows + br - 1) / br, gc = (cols + bc - 1) / bc;
    if (s->shape != std::vector<int64_t>{gr, gc})
      throw Error(ErrorCode::kFormat, "block scales have shape " + shape_string(s->shape) + ", expected [" +
                                          std::to_string(gr) + ", " + std::to_string(gc) + "]", s->name);
    const std::vector<float> f = scale_floats(*s);
    std::vector<float> expanded(size_t(rows * gc));
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(f.begin() + (r / br) * gc, gc, expanded.begin() + r * gc);
    v.scales = own(std::move(expanded));
    v.scale_cols = bc;
  }

  // compressed-tensors' static activation scale, <layer>.input_scale next to <layer>.weight:
  // one positive float; 0 (dynamic, per token) where there is none and the config allows it.
  float fp8_input_scale(const TensorInfo& t) const {
    if (!t.name.ends_with(".weight")) return 0.f;
    const std::string name = t.name.substr(0, t.name.size() - 6) + "input_scale";
    const TensorInfo* s = c_.find(name);
    if (!s) {
      if (static_activations())
        throw Error(ErrorCode::kFormat, "quantization_config asks for static activation scales, but " + name +
                                            " is missing", t.name);
      return 0.f;
    }
    const std::vector<float> f = scale_floats(*s);
    if (f.size() != 1 || !std::isfinite(f[0]) || f[0] <= 0.f)
      throw Error(ErrorCode::kFormat, "input_scale must be one positive finite number", s->name);
    return f[0];
  }

  // Whether quantization_config says activations have static scales: compressed-tensors'
  // input_activations with dynamic false, or the fp8 method's activation_scheme "static".
  bool static_activations() const {
    const nlohmann::json& q = qcfg_;
    if (q.contains("activation_scheme") && q["activation_scheme"] == "static") return true;
    const nlohmann::json groups = q.value("config_groups", nlohmann::json::object());  // small: copied
    for (const auto& [_, g] : groups.items()) {
      if (!g.is_object() || !g.contains("input_activations") || !g["input_activations"].is_object()) continue;
      const nlohmann::json& a = g["input_activations"];
      if (a.contains("dynamic") && a["dynamic"] == false) return true;
    }
    return false;
  }

  // config.json's quantization_config (an empty object where there is none), read once.
  static nlohmann::json quantization_config(const CheckpointIndex& c) {
    if (!c.hf_config.is_object()) return nlohmann::json::object();
    nlohmann::json q = c.hf_config.value("quantization_config", nlohmann::json::object());
    return q.is_object() ? q : nlohmann::json::object();
  }

  // config.json's quantization_config.weight_block_size, [rows, cols] of one scale block.
  std::pair<int64_t, int64_t> fp8_block_size() const {
    const nlohmann::json& q = qcfg_;
    if (!q.contains("weight_block_size")) return {128, 128};
    const nlohmann::json& b = q["weight_block_size"];
    auto ok = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<int64_t>() > 0 && x.get<int64_t>() <= 65536; };
    if (!b.is_array() || b.size() != 2 || !ok(b[0]) || !ok(b[1]))
      throw Error(ErrorCode::kFormat, "quantization_config.weight_block_size must be two positive integers", c_.path);
    return {b[0].get<int64_t>(), b[1].get<int64_t>()};
  }

  std::vector<float> scale_floats(const TensorInfo& s) const {
    if (s.dtype != DType::F32 && s.dtype != DType::F16 && s.dtype != DType::BF16)
      throw Error(ErrorCode::kFormat, "scale tensor must be F32, F16 or BF16", s.name);
    std::vector<float> f(size_t(s.numel()));
    dequantize_row(s.dtype, s.data, f.data(), s.numel());
    return f;
  }

  const float* own(std::vector<float> v) {
    ws_.owned.push_back(std::move(v));
    return ws_.owned.back().data();
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
  WeightView vector(const std::string& name, int64_t n, bool norm) {
    const TensorInfo* t = c_.find(name);
    if (!t) throw Error(ErrorCode::kFormat, "missing tensor " + name, c_.path);
    if (t->numel() != n)
      throw Error(ErrorCode::kFormat, "tensor has " + std::to_string(t->numel()) + " elements, expected " +
                                          std::to_string(n), t->name);
    if (t->dtype == DType::I8 || t->dtype == DType::F8_E4M3)
      throw Error(ErrorCode::kFormat, std::string("a vector cannot be ") + dtype_name(t->dtype), t->name);
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t->dtype, t->data, v.data(), n);
    if (norm && hp_.norm_plus_one)
      for (auto& x : v) x += 1.f;
    ws_.owned.push_back(std::move(v));
    return WeightView{t->name, DType::F32, 1, n, ws_.owned.back().data()};
  }

  // A layer role, as its kind asks.
  WeightView role(const RoleSpec& r, int layer) {
    const std::string n = name(r, layer);
    const int64_t rows = role_extent(r.rows, hp_), cols = role_extent(r.cols, hp_);
    return r.kind == RoleKind::Matrix ? matrix(n, rows, cols) : vector(n, cols, r.kind == RoleKind::Norm);
  }

 private:
  const CheckpointIndex& c_;
  const HParams& hp_;
  WeightSet& ws_;
  const nlohmann::json qcfg_;
  bool gguf_ = false;
  std::string prefix_ = "model.";
};

}  // namespace

// A GGUF file's rope_freqs tensor: divisors of the rotation frequencies (llama.cpp's
// converter bakes Llama 3's rope scaling into it). Empty when absent.
std::vector<float> rope_freq_factors(const CheckpointIndex& ckpt, const HParams& hp) {
  const TensorInfo* rf = ckpt.format == "gguf" ? ckpt.find(kRopeFreqsGguf) : nullptr;
  if (!rf) return {};
  if (rf->numel() != hp.head_dim / 2 || rf->dtype != DType::F32)
    throw Error(ErrorCode::kFormat, "rope_freqs must hold head_dim / 2 float32 values", rf->name);
  const float* f = reinterpret_cast<const float*>(rf->data);
  std::vector<float> out(f, f + hp.head_dim / 2);
  for (float x : out)
    if (!std::isfinite(x) || x <= 0.f)
      throw Error(ErrorCode::kFormat, "rope_freqs holds " + std::to_string(x) + ": every factor must be finite and > 0",
                  rf->name);
  return out;
}

WeightSet map_weights(const CheckpointIndex& ckpt, const HParams& hp) {
  WeightSet ws;
  // Views point into these: never reallocate (a vector role or an FP8 matrix's scales each).
  ws.owned.reserve(size_t(hp.n_layers) * kLayerRoleCount + 4);
  Mapper m(ckpt, hp, ws);
  ws.tok_embd = m.matrix(m.name(kTokEmbdNames), hp.vocab, hp.hidden);
  ws.output_norm = m.vector(m.name(kOutputNormNames), hp.hidden, true);
  ws.output = hp.tied_embeddings ? ws.tok_embd : m.matrix(m.name(kOutputNames), hp.vocab, hp.hidden);
  ws.rope_freq_factors = rope_freq_factors(ckpt, hp);
  ws.layers.resize(size_t(hp.n_layers));
  for (int i = 0; i < hp.n_layers; ++i)
    for (const RoleSpec& r : kLayerRoles)
      if (role_present(r, hp)) ws.layers[size_t(i)][r.role] = m.role(r, i);
  return ws;
}

}  // namespace brisk
