// Hugging Face FP8 checkpoints (gen-model --dtype fp8, every scale layout: per tensor and
// per channel as compressed-tensors writes them, per 128 x 128 block as Qwen3's FP8
// releases): the CPU oracle's logits equal those of the same model with each FP8 weight
// written out as float32 value x scale (decoded here, independently of the loader), and a
// checkpoint whose scales are missing or misshapen is refused by name. Static activation
// scales (input_scale) round each product's input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "base/error.hpp"
#include "engine/score.hpp"
#include "format/checkpoint.hpp"
#include "format/safetensors_writer.hpp"
#include "model/model.hpp"
#include "quant/fp8.hpp"
#include "synthetic/synthetic.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

namespace fs = std::filesystem;

const std::vector<int32_t> kTokens = {1, 17, 30, 44, 9, 77, 5, 120};

std::string make_fp8(const std::string& arch, const std::string& scales, const std::string& activations = "dynamic") {
  SyntheticSpec spec;
  spec.arch = arch;
  spec.format = "hf";
  spec.dtype = DType::F8_E4M3;
  spec.fp8_scales = scales;
  spec.fp8_activations = activations;
  spec.seed = 3;
  const std::string dir = test::scratch_dir() + "/" + arch + "_fp8_" + scales + "_" + activations;
  write_synthetic_checkpoint(spec, dir);
  return dir;
}

std::vector<float> floats_of(const TensorInfo& t) {
  std::vector<float> f(size_t(t.numel()));
  std::memcpy(f.data(), t.data, f.size() * 4);  // the generator writes its scales as F32
  return f;
}

// w[r][c] x its scale, by the layout the scale tensor's name and shape say.
std::vector<float> decode(const TensorInfo& w, const CheckpointIndex& c) {
  const int64_t rows = w.shape[0], cols = w.shape[1];
  const TensorInfo* s = c.find(w.name + "_scale");
  const TensorInfo* inv = c.find(w.name + "_scale_inv");
  const std::vector<float> sc = floats_of(s ? *s : *inv);
  std::vector<float> out(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) {
      const float scale = inv ? sc[size_t((r / 128) * inv->shape[1] + col / 128)] : sc.size() == 1 ? sc[0] : sc[size_t(r)];
      out[size_t(r * cols + col)] = fp8_e4m3_to_float(w.data[r * cols + col]) * scale;
    }
  return out;
}

bool is_scale(const std::string& name) { return name.ends_with("_scale") || name.ends_with("_scale_inv"); }
bool is_input_scale(const std::string& name) { return name.ends_with(".input_scale"); }

// The checkpoint again with `edit` applied to its tensor list (and FP8 decoded when asked).
std::string rewrite(const std::string& dir, const std::string& to, bool to_f32,
                    const std::function<void(std::vector<SafetensorsTensor>&)>& edit = {},
                    const std::function<void(nlohmann::json&)>& edit_config = {}) {
  auto c = open_checkpoint(dir);
  std::vector<SafetensorsTensor> out;
  for (const TensorInfo& t : c->tensors) {
    if (to_f32 && (is_scale(t.name) || is_input_scale(t.name))) continue;
    if (to_f32 && t.dtype == DType::F8_E4M3) {
      const std::vector<float> f = decode(t, *c);
      std::vector<uint8_t> b(f.size() * 4);
      std::memcpy(b.data(), f.data(), b.size());
      out.push_back({t.name, DType::F32, t.shape, std::move(b)});
    } else {
      out.push_back({t.name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
    }
  }
  if (edit) edit(out);
  fs::create_directories(to);
  write_safetensors(to + "/model.safetensors", out, {{"format", "pt"}});
  nlohmann::json config = c->hf_config;
  if (to_f32) config.erase("quantization_config");
  if (edit_config) edit_config(config);
  std::ofstream(to + "/config.json") << config.dump(2);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(dir + "/" + f, to + "/" + f, fs::copy_options::overwrite_existing);
  return to;
}

class Fp8Checkpoint : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Fp8Checkpoint, LogitsAreTheDecodedModels) {
  const auto& [arch, scales] = GetParam();
  const std::string dir = make_fp8(arch, scales);
  {
    auto c = open_checkpoint(dir);
    int fp8 = 0;
    for (const TensorInfo& t : c->tensors) fp8 += t.dtype == DType::F8_E4M3;
    EXPECT_GT(fp8, 4);
    EXPECT_TRUE(c->hf_config.contains("quantization_config"));
  }
  const std::string f32 = rewrite(dir, dir + "_f32", true);
  auto backend = make_cpu_backend(2);
  auto a = Model::load(dir, *backend);
  auto b = Model::load(f32, *backend);
  const std::vector<float> la = score_tokens(*a, kTokens), lb = score_tokens(*b, kTokens);
  ASSERT_EQ(la.size(), lb.size());
  float diff = 0, scale = 0;
  for (size_t i = 0; i < la.size(); ++i) diff = std::max(diff, std::fabs(la[i] - lb[i])), scale = std::max(scale, std::fabs(lb[i]));
  // Per-row scales multiply the dot (sum(q x) s) where the float model sums (q s) x:
  // rounding apart only. Block scales are applied to the row first: the same floats.
  EXPECT_LE(diff, 1e-5f * scale) << arch << " " << scales;
  if (scales == "block") {
    EXPECT_EQ(diff, 0.f);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, Fp8Checkpoint,
                         ::testing::Combine(::testing::Values("llama", "qwen3"),
                                            ::testing::Values("tensor", "channel", "block")));

void expect_load_error(const std::string& dir, const std::string& words) {
  auto backend = make_cpu_backend(1);
  try {
    Model::load(dir, *backend);
    ADD_FAILURE() << "loaded " << dir;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Fp8Checkpoint, MissingOrMisshapenScalesAreRefused) {
  const std::string block = make_fp8("llama", "block"), channel = make_fp8("llama", "channel");
  const std::string q = "model.layers.0.self_attn.q_proj.weight";
  expect_load_error(rewrite(block, block + "_noscale", false, [&](auto& ts) {
    std::erase_if(ts, [&](const SafetensorsTensor& t) { return t.name == q + "_scale_inv"; });
  }), "without its _scale or _scale_inv");
  expect_load_error(rewrite(block, block + "_badshape", false, [&](auto& ts) {
    for (auto& t : ts)
      if (t.name == q + "_scale_inv")
        t.shape = {t.shape[0] + 1, t.shape[1]}, t.bytes.resize(t.bytes.size() + size_t(t.shape[1]) * 4);
  }), "block scales have shape");
  expect_load_error(rewrite(channel, channel + "_short", false, [&](auto& ts) {
    for (auto& t : ts)
      if (t.name == q + "_scale") t.shape = {t.shape[0] - 1, 1}, t.bytes.resize(t.bytes.size() - 4);
  }), "one value per tensor or per row");
}


double relative_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += double(a[i] - b[i]) * (a[i] - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / den);
}

std::vector<float> logits_of(const std::string& dir) {
  auto backend = make_cpu_backend(2);
  return score_tokens(*Model::load(dir, *backend), kTokens);
}

void set_dynamic(nlohmann::json& config) {
  config["quantization_config"]["config_groups"]["group_0"]["input_activations"]["dynamic"] = true;
}

// Static activation scales (compressed-tensors' input_scale): every product's input is
// rounded through E4M3 at its scale (the bits of that are CpuMatmul's test), so the logits
// are near, not equal to, the same weights' with dynamic scales; a scale so small that
// inputs saturate moves them much further; a missing or senseless scale is refused.
TEST(Fp8Checkpoint, StaticActivationScalesRoundEveryInput) {
  const std::string dir = make_fp8("llama", "channel", "static");
  {
    auto c = open_checkpoint(dir);
    int fp8 = 0, inputs = 0;
    for (const TensorInfo& t : c->tensors) fp8 += t.dtype == DType::F8_E4M3, inputs += is_input_scale(t.name);
    EXPECT_EQ(inputs, fp8);
  }
  const std::vector<float> s = logits_of(dir);
  const std::string dynamic = rewrite(dir, dir + "_dynamic", false, [](auto& ts) {
    std::erase_if(ts, [](const SafetensorsTensor& t) { return is_input_scale(t.name); });
  }, set_dynamic);
  const double near = relative_rms(s, logits_of(dynamic));
  EXPECT_GT(near, 0.0);
  EXPECT_LT(near, 0.1);
  auto set_inputs = [](float value) {
    return [value](std::vector<SafetensorsTensor>& ts) {
      for (auto& t : ts)
        if (is_input_scale(t.name)) std::memcpy(t.bytes.data(), &value, 4);
    };
  };
  const double far = relative_rms(logits_of(rewrite(dir, dir + "_tiny", false, set_inputs(1e-3f))), logits_of(dynamic));
  std::printf("static against dynamic activation scales: relative RMS %.4f; inputs saturated: %.4f\n", near, far);
  EXPECT_GT(far, 2 * near) << near;
  const std::string q = "model.layers.0.self_attn.q_proj.";
  expect_load_error(rewrite(dir, dir + "_missing", false, [&](auto& ts) {
    std::erase_if(ts, [&](const SafetensorsTensor& t) { return t.name == q + "input_scale"; });
  }), "static activation scales, but " + q + "input_scale is missing");
  expect_load_error(rewrite(dir, dir + "_negative", false, set_inputs(-0.5f)), "one positive finite number");
}

}  // namespace
}  // namespace brisk
