// The weight-role table: its rows are in the enum's order, names and presence follow the
// arch switches, and for every arch and format the loader maps exactly the tensors the
// table names: none left over in the file, none missing from the WeightSet.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "format/checkpoint.hpp"
#include "model/hparams.hpp"
#include "model/weight_roles.hpp"
#include "model/weights.hpp"
#include "synthetic/synthetic.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

TEST(WeightRoles, RowsFollowTheEnum) {
  for (int i = 0; i < kLayerRoleCount; ++i) EXPECT_EQ(int(kLayerRoles[size_t(i)].role), i);
}

TEST(WeightRoles, NamesInBothSchemes) {
  const RoleSpec& wq = kLayerRoles[size_t(Role::Wq)];
  EXPECT_EQ(role_tensor_name(wq, 3, true, false), "blk.3.attn_q.weight");
  EXPECT_EQ(role_tensor_name(wq, 12, false, false), "model.layers.12.self_attn.q_proj.weight");
  // The pre-MLP norm: one GGUF name, two HF names.
  const RoleSpec& ffn = kLayerRoles[size_t(Role::FfnNorm)];
  EXPECT_EQ(role_tensor_name(ffn, 0, true, true), "blk.0.ffn_norm.weight");
  EXPECT_EQ(role_tensor_name(ffn, 0, false, false), "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(role_tensor_name(ffn, 0, false, true), "model.layers.0.pre_feedforward_layernorm.weight");
}

TEST(WeightRoles, PresenceFollowsTheSwitches) {
  const HParams qwen2 = arch_switches("qwen2"), gemma = arch_switches("gemma3"), llama = arch_switches("llama");
  auto present = [](Role r, const HParams& hp) { return role_present(kLayerRoles[size_t(r)], hp); };
  EXPECT_TRUE(present(Role::Bq, qwen2));
  EXPECT_FALSE(present(Role::Bq, llama));
  EXPECT_TRUE(present(Role::QNorm, gemma));
  EXPECT_TRUE(present(Role::PostFfnNorm, gemma));
  EXPECT_FALSE(present(Role::PostFfnNorm, qwen2));
  for (Role r : {Role::AttnNorm, Role::Wq, Role::Wo, Role::FfnNorm, Role::Gate, Role::Up, Role::Down})
    EXPECT_TRUE(present(r, llama));
}

class WeightRolesMapping : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(WeightRolesMapping, LoaderTakesExactlyTheTableTensors) {
  const auto [arch, format] = GetParam();
  SyntheticSpec spec;
  spec.arch = arch;
  spec.format = format;
  const std::string path = test::scratch_dir() + "/" + arch + "_" + format;
  write_synthetic_checkpoint(spec, path);
  auto ckpt = open_checkpoint(path);
  const HParams hp = hparams_from_checkpoint(*ckpt);
  WeightSet ws = map_weights(*ckpt, hp);

  std::set<std::string> mapped{ws.tok_embd.name, ws.output_norm.name, ws.output.name};
  ASSERT_EQ(ws.layers.size(), size_t(hp.n_layers));
  for (const auto& layer : ws.layers)
    for (const RoleSpec& r : kLayerRoles) {
      const WeightView& v = layer[r.role];
      ASSERT_EQ(v.data != nullptr, role_present(r, hp)) << v.name << " role " << int(r.role);
      if (!v.data) continue;
      EXPECT_EQ(v.cols, role_extent(r.cols, hp)) << v.name;
      if (r.kind == RoleKind::Matrix) {
        EXPECT_EQ(v.rows, role_extent(r.rows, hp)) << v.name;
      }
      EXPECT_TRUE(mapped.insert(v.name).second) << v.name << " mapped twice";
    }
  if (!ws.rope_freq_factors.empty()) mapped.insert(kRopeFreqsGguf);
  std::set<std::string> in_file;
  for (const TensorInfo& t : ckpt->tensors) in_file.insert(t.name);
  EXPECT_EQ(mapped, in_file);
}

INSTANTIATE_TEST_SUITE_P(AllArchs, WeightRolesMapping,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "qwen3", "gemma3"),
                                            ::testing::Values("gguf", "hf")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace brisk
