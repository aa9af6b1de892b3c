#include "synthetic/synthetic.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/half.hpp"
#include "base/thread_pool.hpp"
#include "format/gguf_writer.hpp"
#include "format/safetensors_writer.hpp"
#include "model/hparams.hpp"
#include "model/weight_roles.hpp"
#include "synthetic/synthetic_fp8.hpp"
#include "synthetic/synthetic_vocab.hpp"
#include "quant/quantize.hpp"

namespace brisk {

namespace {

using json = nlohmann::json;

struct Shape {
  const char* arch;
  const char* size;
  int64_t vocab, hidden;
  int layers, heads, kv_heads, head_dim;
  int64_t ffn, context;
  float rope_theta;
  int sliding_window;   // gemma3
  float llama3_factor;  // llama: Llama 3 rope scaling factor (0 = off)
  int llama3_original_context;
  bool tied;
};

// Real shapes are the published configs of those models; tiny ones match tools/make_model_fixtures.py.
const Shape kShapes[] = {
    {"llama", "tiny", 512, 64, 2, 4, 2, 16, 128, 256, 500000.f, 0, 8.f, 64, false},
    {"qwen2", "tiny", 512, 64, 2, 4, 2, 16, 128, 256, 1000000.f, 0, 0.f, 0, true},
    {"qwen3", "tiny", 512, 64, 2, 4, 2, 32, 128, 256, 1000000.f, 0, 0.f, 0, false},
    {"gemma3", "tiny", 512, 64, 6, 4, 2, 32, 128, 256, 1000000.f, 8, 0.f, 0, true},
    {"llama", "small", 4096, 512, 4, 8, 2, 64, 1408, 2048, 500000.f, 0, 8.f, 8192, false},
    {"qwen2", "small", 4096, 512, 4, 8, 2, 64, 1408, 2048, 1000000.f, 0, 0.f, 0, true},
    {"qwen3", "small", 4096, 512, 4, 8, 2, 64, 1408, 2048, 1000000.f, 0, 0.f, 0, false},
    {"gemma3", "small", 4096, 512, 6, 8, 2, 64, 1408, 2048, 1000000.f, 64, 0.f, 0, true},
    {"llama", "llama3-8b", 128256, 4096, 32, 32, 8, 128, 14336, 131072, 500000.f, 0, 8.f, 8192, false},
    {"qwen2", "qwen2.5-7b", 152064, 3584, 28, 28, 4, 128, 18944, 32768, 1000000.f, 0, 0.f, 0, false},
    {"qwen3", "qwen3-8b", 151936, 4096, 36, 32, 8, 128, 12288, 40960, 1000000.f, 0, 0.f, 0, false},
    {"gemma3", "gemma3-270m", 262144, 640, 18, 4, 1, 256, 2048, 32768, 1000000.f, 512, 0.f, 0, true},
    {"gemma3", "gemma3-27b", 262208, 5376, 62, 32, 16, 128, 21504, 131072, 1000000.f, 1024, 0.f, 0, true},
};

const Shape& find_shape(const SyntheticSpec& spec) {
  for (const auto& s : kShapes)
    if (spec.arch == s.arch && spec.size == s.size) return s;
  std::string known;
  for (const auto& s : kShapes)
    if (spec.arch == s.arch) known += std::string(known.empty() ? "" : ", ") + s.size;
  if (known.empty())
    throw Error(ErrorCode::kUnsupported, "unknown architecture '" + spec.arch + "' (llama, qwen2, qwen3, gemma3)");
  throw Error(ErrorCode::kInvalidArgument, "unknown size '" + spec.size + "' for " + spec.arch + " (" + known + ")");
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Uniform values with mean `center` and standard deviation `stddev`; each row has its own
// stream so rows can be generated in parallel and the result never depends on threads.
std::vector<float> random_tensor(uint64_t seed, const std::string& name, int64_t rows, int64_t cols, float center,
                                 float stddev, ThreadPool& pool) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  const float a = stddev * std::sqrt(3.f);
  const uint64_t base = seed ^ fnv1a(name);
  pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint64_t state = base + uint64_t(r) * 0x632be59bd9b4e019ull;
      float* row = v.data() + r * cols;
      for (int64_t c = 0; c < cols; ++c) {
        double u = double(splitmix(state) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
        row[c] = center + a * float(2.0 * u - 1.0);
      }
    }
  });
  return v;
}

// Rows of a q or k projection reordered as llama.cpp's converter does for llama GGUF files,
// so that interleaved-pair rope on the file equals rotate-half rope on the HF weights.
std::vector<float> permute_for_interleaved_rope(const std::vector<float>& w, int heads, int head_dim, int64_t cols) {
  std::vector<float> out(w.size());
  const int half = head_dim / 2;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < half; ++i)
      for (int j = 0; j < 2; ++j) {
        int64_t dst = int64_t(h) * head_dim + i * 2 + j;
        int64_t src = int64_t(h) * head_dim + j * half + i;
        std::memcpy(&out[size_t(dst * cols)], &w[size_t(src * cols)], size_t(cols) * 4);
      }
  return out;
}

std::vector<uint8_t> encode(const std::vector<float>& v, DType dtype, int64_t rows, int64_t cols, ThreadPool& pool) {
  auto row_bytes = dtype_bytes(dtype, uint64_t(cols));
  if (!row_bytes)
    throw Error(ErrorCode::kInvalidArgument, std::string("rows of ") + std::to_string(cols) +
                                                 " elements cannot be stored as " + dtype_name(dtype));
  std::vector<uint8_t> out(size_t(*row_bytes * uint64_t(rows)));
  pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      quantize_row(dtype, v.data() + r * cols, out.data() + uint64_t(r) * *row_bytes, cols);
  });
  return out;
}

// A tensor to write: its values are drawn only when it is written (one at a time), so a
// checkpoint larger than memory can be made.
struct TensorOut {
  std::string hf_name, gguf_name;
  int64_t rows, cols;
  float center, stddev;
  bool matrix;
};

class Generator {
 public:
  Generator(const SyntheticSpec& spec, const Shape& s) : spec_(spec), s_(s), pool_(0) {}

  void add(const std::string& hf, const std::string& gguf, int64_t rows, int64_t cols, float center, float stddev,
           bool matrix) {
    out_.push_back({hf, gguf, rows, cols, center, stddev, matrix});
  }

  // Every tensor the role table names for this arch, with the spread a trained model's
  // tensors roughly have: matrices 1/sqrt(fan-in), small biases, norms near their centre.
  void build() {
    const HParams hp = shape_hparams();
    const bool gemma = hp.arch == Arch::Gemma3;
    // HF Gemma norms are stored as w in (1 + w); everyone else stores the scale itself.
    const float norm_center = gemma ? 0.f : 1.f;
    const int64_t H = hp.hidden;
    add(kTokEmbdNames.hf, kTokEmbdNames.gguf, s_.vocab, H, 0.f, 1.f, true);
    for (int i = 0; i < s_.layers; ++i)
      for (const RoleSpec& r : kLayerRoles) {
        if (!role_present(r, hp)) continue;
        const int64_t rows = role_extent(r.rows, hp), cols = role_extent(r.cols, hp);
        const std::string hf = role_tensor_name(r, i, false, gemma), gguf = role_tensor_name(r, i, true, gemma);
        if (r.kind == RoleKind::Matrix)
          add(hf, gguf, rows, cols, 0.f, 1.f / std::sqrt(float(cols)), true);
        else if (r.kind == RoleKind::Bias)
          add(hf, gguf, 1, cols, 0.f, 0.1f, false);
        else
          add(hf, gguf, 1, cols, norm_center, 0.05f, false);
      }
    add(kOutputNormNames.hf, kOutputNormNames.gguf, 1, H, norm_center, 0.05f, false);
    if (!s_.tied) add(kOutputNames.hf, kOutputNames.gguf, s_.vocab, H, 0.f, 1.f / std::sqrt(float(H)), true);
  }

  // The shape's numbers and its arch's switches, as the loader will read them back.
  HParams shape_hparams() const {
    HParams hp = arch_switches(s_.arch);
    hp.vocab = s_.vocab;
    hp.hidden = s_.hidden;
    hp.n_layers = s_.layers;
    hp.n_heads = s_.heads;
    hp.n_kv_heads = s_.kv_heads;
    hp.head_dim = s_.head_dim;
    hp.ffn = s_.ffn;
    return hp;
  }

  void write_gguf(const std::string& path) {
    const std::string a = s_.arch;
    const bool gemma = a == "gemma3", llama = a == "llama";
    GgufWriter w;
    w.set_string("general.architecture", a);
    w.set_string("general.name", "brisk synthetic " + a + " " + spec_.size);
    w.set_u32("general.file_type", uint32_t(spec_.dtype));
    w.set_u64("general.seed", spec_.seed);
    w.set_u32(a + ".context_length", uint32_t(s_.context));
    w.set_u32(a + ".embedding_length", uint32_t(s_.hidden));
    w.set_u32(a + ".block_count", uint32_t(s_.layers));
    w.set_u32(a + ".feed_forward_length", uint32_t(s_.ffn));
    w.set_u32(a + ".attention.head_count", uint32_t(s_.heads));
    w.set_u32(a + ".attention.head_count_kv", uint32_t(s_.kv_heads));
    w.set_u32(a + ".attention.key_length", uint32_t(s_.head_dim));
    w.set_u32(a + ".attention.value_length", uint32_t(s_.head_dim));
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_f32(a + ".rope.freq_base", s_.rope_theta);
    w.set_u32(a + ".rope.dimension_count", uint32_t(s_.head_dim));
    if (gemma) w.set_u32(a + ".attention.sliding_window", uint32_t(s_.sliding_window));
    add_gguf_vocab(w, llama ? "llama-bpe" : "qwen2");
    for (const TensorOut& t : out_) {
      DType dt = t.matrix ? spec_.dtype : DType::F32;
      std::vector<int64_t> shape = t.matrix ? std::vector<int64_t>{t.rows, t.cols} : std::vector<int64_t>{t.cols};
      w.add_tensor_lazy(t.gguf_name, dt, shape, [this, &t, llama, gemma, dt] { return gguf_values(t, llama, gemma, dt); });
    }
    if (llama && s_.llama3_factor > 0.f) {
      auto f = llama3_freq_factors();
      std::vector<uint8_t> bytes(f.size() * 4);
      std::memcpy(bytes.data(), f.data(), bytes.size());
      w.add_tensor(kRopeFreqsGguf, DType::F32, {int64_t(f.size())}, bytes);
    }
    w.write(path);
  }

  void write_hf(const std::string& dir) {
    const bool fp8 = spec_.dtype == DType::F8_E4M3;
    if (spec_.dtype != DType::F32 && spec_.dtype != DType::F16 && spec_.dtype != DType::BF16 && !fp8)
      throw Error(ErrorCode::kInvalidArgument, std::string("an HF checkpoint holds F32, F16, BF16 or F8_E4M3, not ") +
                                                   dtype_name(spec_.dtype));
    if (fp8) fp8_quantization_config(spec_.fp8_scales, spec_.fp8_activations);  // bad options fail before any file
    std::filesystem::create_directories(dir);
    std::vector<SafetensorsTensor> tensors;
    for (const TensorOut& t : out_) {
      std::vector<int64_t> shape = t.matrix ? std::vector<int64_t>{t.rows, t.cols} : std::vector<int64_t>{t.cols};
      if (fp8 && t.matrix && t.hf_name.starts_with("model.layers.")) {
        for (auto& x : encode_fp8_matrix(t.hf_name, values(t), t.rows, t.cols, spec_.fp8_scales))
          tensors.push_back(std::move(x));
        if (spec_.fp8_activations == "static") tensors.push_back(fp8_static_input_scale(t.hf_name));
        continue;
      }
      const DType dt = !t.matrix ? DType::F32 : fp8 ? DType::BF16 : spec_.dtype;
      tensors.push_back({t.hf_name, dt, shape, encode(values(t), dt, t.rows, t.cols, pool_)});
    }
    write_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
    write_json(dir + "/config.json", hf_config());
    write_json(dir + "/generation_config.json", json{{"bos_token_id", 1}, {"eos_token_id", 2}, {"do_sample", false}});
    SyntheticVocab v = make_synthetic_vocab(s_.vocab);
    write_json(dir + "/tokenizer.json", synthetic_tokenizer_json(v));
    write_json(dir + "/tokenizer_config.json",
               json{{"bos_token", v.tokens[1]}, {"eos_token", v.tokens[2]}, {"pad_token", v.tokens[0]},
                    {"add_bos_token", false}, {"model_max_length", s_.context},
                    {"tokenizer_class", "PreTrainedTokenizerFast"}});
  }

 private:
  std::vector<float> values(const TensorOut& t) {
    return random_tensor(spec_.seed, t.hf_name, t.rows, t.cols, t.center, t.stddev, pool_);
  }

  // A tensor's bytes as llama.cpp's converter would have stored the HF tensor.
  std::vector<uint8_t> gguf_values(const TensorOut& t, bool llama, bool gemma, DType dt) {
    std::vector<float> v = values(t);
    if (llama && t.hf_name.ends_with("q_proj.weight")) v = permute_for_interleaved_rope(v, s_.heads, s_.head_dim, t.cols);
    if (llama && t.hf_name.ends_with("k_proj.weight")) v = permute_for_interleaved_rope(v, s_.kv_heads, s_.head_dim, t.cols);
    if (gemma && t.hf_name.ends_with("norm.weight"))  // llama.cpp's converter stores 1 + w
      for (auto& x : v) x += 1.f;
    return encode(v, dt, t.rows, t.cols, pool_);
  }

  std::vector<float> llama3_freq_factors() const {
    // As llama.cpp's converter computes them from the HF rope_scaling block.
    std::vector<float> f(static_cast<size_t>(s_.head_dim / 2));
    const double low = 1.0, high = 4.0, orig = s_.llama3_original_context;
    for (int i = 0; i < s_.head_dim / 2; ++i) {
      double freq = 1.0 / std::pow(double(s_.rope_theta), double(2 * i) / s_.head_dim);
      double wavelen = 2 * 3.14159265358979323846 / freq;
      if (wavelen < orig / high) {
        f[size_t(i)] = 1.f;
      } else if (wavelen > orig / low) {
        f[size_t(i)] = s_.llama3_factor;
      } else {
        double smooth = (orig / wavelen - low) / (high - low);
        f[size_t(i)] = float(1.0 / ((1 - smooth) / s_.llama3_factor + smooth));
      }
    }
    return f;
  }

  void add_gguf_vocab(GgufWriter& w, const std::string& pre) {
    SyntheticVocab v = make_synthetic_vocab(s_.vocab);
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_array_strings("tokenizer.ggml.tokens", v.tokens);
    w.set_array_i32("tokenizer.ggml.token_type", v.token_types);
    w.set_array_strings("tokenizer.ggml.merges", v.merges);
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos_id));
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos_id));
    w.set_u32("tokenizer.ggml.padding_token_id", uint32_t(v.pad_id));
    w.set_bool("tokenizer.ggml.add_bos_token", false);
  }

  json hf_config() const {
    const std::string a = s_.arch;
    json c{{"vocab_size", s_.vocab},
           {"hidden_size", s_.hidden},
           {"intermediate_size", s_.ffn},
           {"num_hidden_layers", s_.layers},
           {"num_attention_heads", s_.heads},
           {"num_key_value_heads", s_.kv_heads},
           {"head_dim", s_.head_dim},
           {"max_position_embeddings", s_.context},
           {"rms_norm_eps", 1e-6},
           {"rope_theta", s_.rope_theta},
           {"tie_word_embeddings", s_.tied},
           {"bos_token_id", 1},
           {"eos_token_id", 2},
           {"torch_dtype", spec_.dtype == DType::F32 ? "float32" : spec_.dtype == DType::F16 ? "float16" : "bfloat16"}};
    if (spec_.dtype == DType::F8_E4M3) c["quantization_config"] = fp8_quantization_config(spec_.fp8_scales, spec_.fp8_activations);
    if (a == "llama") {
      c["architectures"] = {"LlamaForCausalLM"};
      c["model_type"] = "llama";
      c["hidden_act"] = "silu";
      c["attention_bias"] = false;
      c["mlp_bias"] = false;
      if (s_.llama3_factor > 0.f)
        c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", s_.llama3_factor}, {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", s_.llama3_original_context}};
    } else if (a == "qwen2" || a == "qwen3") {
      c["architectures"] = {a == "qwen2" ? "Qwen2ForCausalLM" : "Qwen3ForCausalLM"};
      c["model_type"] = a;
      c["hidden_act"] = "silu";
      c["use_sliding_window"] = false;
      if (a == "qwen3") c["attention_bias"] = false;
    } else {
      c["architectures"] = {"Gemma3ForCausalLM"};
      c["model_type"] = "gemma3_text";
      c["hidden_activation"] = "gelu_pytorch_tanh";
      c["sliding_window"] = s_.sliding_window;
      c["rope_local_base_freq"] = 10000.0;
      c["query_pre_attn_scalar"] = s_.layers == 62 ? s_.hidden / s_.heads : s_.head_dim;
      c["final_logit_softcapping"] = nullptr;
      c["attn_logit_softcapping"] = nullptr;
      json types = json::array();
      for (int i = 0; i < s_.layers; ++i) types.push_back((i + 1) % 6 == 0 ? "full_attention" : "sliding_attention");
      c["layer_types"] = types;
      c["sliding_window_pattern"] = 6;
    }
    return c;
  }

  static void write_json(const std::string& path, const json& j) {
    std::ofstream f(path);
    f << j.dump(2) << "\n";
    if (!f) throw Error(ErrorCode::kIo, "cannot write", path);
  }

  const SyntheticSpec& spec_;
  const Shape& s_;
  ThreadPool pool_;
  std::vector<TensorOut> out_;
};

}  // namespace

std::vector<std::string> synthetic_sizes(const std::string& arch) {
  std::vector<std::string> out;
  for (const auto& s : kShapes)
    if (arch == s.arch) out.push_back(s.size);
  return out;
}

void write_synthetic_checkpoint(const SyntheticSpec& spec, const std::string& out_path) {
  const Shape& s = find_shape(spec);
  if (spec.format != "gguf" && spec.format != "hf")
    throw Error(ErrorCode::kInvalidArgument, "unknown format '" + spec.format + "' (gguf or hf)");
  Generator g(spec, s);
  g.build();
  if (spec.format == "gguf")
    g.write_gguf(out_path);
  else
    g.write_hf(out_path);
}

}  // namespace brisk
