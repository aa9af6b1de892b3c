// The one table of weight roles: every tensor a decoder block reads, its names in GGUF and
// in Hugging Face checkpoints, its shape in HParams terms and the switch that makes it
// present. The loader (weights.cpp), the forward pass (transformer.cpp) and the synthetic
// checkpoint generator (tools/synthetic/) all read this table, so a new role is one row.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "model/hparams.hpp"

namespace brisk {

// Per-layer roles, in the table's order.
enum class Role : uint8_t {
  AttnNorm, Wq, Wk, Wv, Wo, Bq, Bk, Bv, QNorm, KNorm, PostAttnNorm,
  FfnNorm, Gate, Up, Down, PostFfnNorm,
};
inline constexpr int kLayerRoleCount = 16;

enum class RoleKind : uint8_t {
  Matrix,  // [rows, cols], stays in the file mapping, streamed by matmuls
  Bias,    // a float32 vector added to a matmul's output
  Norm,    // an RMSNorm scale (Gemma's HF files store w of 1 + w)
};

// A role's extent: rows and cols of a matrix, the length of a vector.
enum class RoleDim : uint8_t { One, Hidden, QWidth, KvWidth, HeadDim, Ffn };

// The HParams switch a role depends on.
enum class RoleWhen : uint8_t { Always, QkvBias, QkNorm, PostNorms };

// Matrices uploaded side by side so a backend can run them as one product.
enum class RoleGroup : uint8_t { None, Qkv, GateUp };

struct RoleSpec {
  Role role;
  RoleKind kind;
  RoleDim rows, cols;
  RoleWhen when;
  RoleGroup group;
  const char* gguf;      // "%" is the layer index
  const char* hf;        // without the text model's prefix ("model." or a multimodal wrapper's)
  const char* hf_gemma;  // Gemma 3's HF name where it differs, else nullptr
};

extern const std::array<RoleSpec, kLayerRoleCount> kLayerRoles;

// Whole-model tensors.
struct ModelTensorNames {
  const char* gguf;
  const char* hf;
};
inline constexpr ModelTensorNames kTokEmbdNames{"token_embd.weight", "model.embed_tokens.weight"};
inline constexpr ModelTensorNames kOutputNormNames{"output_norm.weight", "model.norm.weight"};
inline constexpr ModelTensorNames kOutputNames{"output.weight", "lm_head.weight"};
inline constexpr const char* kRopeFreqsGguf = "rope_freqs.weight";

int64_t role_extent(RoleDim d, const HParams& hp);
bool role_present(const RoleSpec& r, const HParams& hp);
// The role's tensor name in layer `layer` of a GGUF file or an HF checkpoint.
std::string role_tensor_name(const RoleSpec& r, int layer, bool gguf, bool gemma_names);

// One value per role of a layer: the loader's views, the backend's uploaded weights.
template <typename W>
struct LayerOf {
  std::array<W, kLayerRoleCount> w{};
  W& operator[](Role r) { return w[size_t(r)]; }
  const W& operator[](Role r) const { return w[size_t(r)]; }
};

}  // namespace brisk
