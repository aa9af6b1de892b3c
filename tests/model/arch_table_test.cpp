// The arch table: each architecture's switches come out the same from a GGUF file and from
// an HF directory, Gemma 3's sliding layers follow its pattern, and what brisk does not run is
// refused by name.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "model/hparams.hpp"
#include "synthetic/synthetic.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

struct Expected {
  const char* arch;
  Arch id;
  bool qkv_bias, qk_norm, post_norms, embed_scale, tied;
  Activation act;
};

const Expected kExpected[] = {
    {"llama", Arch::Llama, false, false, false, false, false, Activation::SiLU},
    {"qwen2", Arch::Qwen2, true, false, false, false, true, Activation::SiLU},
    {"qwen3", Arch::Qwen3, false, true, false, false, false, Activation::SiLU},
    {"gemma3", Arch::Gemma3, false, true, true, true, true, Activation::GeluTanh},
};

HParams load_hparams(const std::string& arch, const std::string& format) {
  SyntheticSpec spec;
  spec.arch = arch;
  spec.format = format;
  const std::string path = test::scratch_dir() + "/" + arch + (format == "gguf" ? ".gguf" : "_hf");
  write_synthetic_checkpoint(spec, path);
  return hparams_from_checkpoint(*open_checkpoint(path));
}

class ArchTableTest : public ::testing::TestWithParam<Expected> {};

TEST_P(ArchTableTest, SwitchesAgreeAcrossFormats) {
  const Expected& e = GetParam();
  for (const char* format : {"gguf", "hf"}) {
    SCOPED_TRACE(format);
    const HParams hp = load_hparams(e.arch, format);
    EXPECT_EQ(hp.arch, e.id);
    EXPECT_EQ(hp.arch_name, e.arch);
    EXPECT_EQ(hp.qkv_bias, e.qkv_bias);
    EXPECT_EQ(hp.qk_norm, e.qk_norm);
    EXPECT_EQ(hp.post_norms, e.post_norms);
    EXPECT_EQ(hp.embed_scale, e.embed_scale);
    EXPECT_EQ(hp.tied_embeddings, e.tied);
    EXPECT_EQ(hp.act, e.act);
    // GGUF files store Gemma's 1 + w already; HF files store w.
    EXPECT_EQ(hp.norm_plus_one, e.id == Arch::Gemma3 && std::string(format) == "hf");
    EXPECT_GT(hp.query_scale, 0.f);
    EXPECT_EQ(hp.layer_sliding.size(), size_t(hp.n_layers));
  }
}

TEST_P(ArchTableTest, ArchSwitchesMatchTheLoadedFile) {
  const Expected& e = GetParam();
  const HParams table = arch_switches(e.arch), file = load_hparams(e.arch, "gguf");
  EXPECT_EQ(table.arch, file.arch);
  EXPECT_EQ(table.qkv_bias, file.qkv_bias);
  EXPECT_EQ(table.qk_norm, file.qk_norm);
  EXPECT_EQ(table.post_norms, file.post_norms);
}

INSTANTIATE_TEST_SUITE_P(AllArchs, ArchTableTest, ::testing::ValuesIn(kExpected),
                         [](const auto& info) { return std::string(info.param.arch); });

// Gemma 3: every sixth layer is global, the rest slide; both formats say so (GGUF by the
// table's pattern, HF by config.json's layer_types).
TEST(ArchTable, GemmaSlidingPattern) {
  for (const char* format : {"gguf", "hf"}) {
    SCOPED_TRACE(format);
    const HParams hp = load_hparams("gemma3", format);
    ASSERT_EQ(hp.n_layers, 6);
    EXPECT_GT(hp.sliding_window, 0);
    for (int i = 0; i < hp.n_layers; ++i) EXPECT_EQ(hp.layer_sliding[size_t(i)], (i + 1) % 6 != 0) << "layer " << i;
    EXPECT_NE(hp.rope.theta, hp.rope_local.theta);  // two rope bases
  }
  for (const char* arch : {"llama", "qwen2", "qwen3"})
    for (bool s : load_hparams(arch, "gguf").layer_sliding) EXPECT_FALSE(s) << arch;
}

TEST(ArchTable, UnknownNamesAreRefused) {
  try {
    arch_switches("mamba");
    FAIL() << "mamba accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("mamba"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisk
