// HParams: everything the forward pass needs to know about an architecture, as switches.
// The arch table (arch_table.cpp) fills it from GGUF metadata or an HF config.json; the
// transformer reads it. No per-architecture copy of the block exists anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace brisk {

class CheckpointIndex;

enum class Arch { Llama, Qwen2, Qwen3, Gemma3 };

struct HParams {
  Arch arch = Arch::Llama;
  std::string arch_name;  // "llama", "qwen2", "qwen3", "gemma3"
  int64_t vocab = 0;
  int64_t hidden = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int64_t ffn = 0;
  int64_t context = 0;  // trained context length
  float norm_eps = 1e-6f;

  // Switches of the block.
  bool norm_plus_one = false;   // Gemma (HF weights): scale by (1 + w); GGUF files store 1 + w
  bool qkv_bias = false;        // Qwen2
  bool qk_norm = false;         // Qwen3, Gemma 3: RMSNorm over each head of q and k
  bool post_norms = false;      // Gemma 3: norms after attention and after the MLP
  bool embed_scale = false;     // Gemma: embeddings times sqrt(hidden)
  bool tied_embeddings = false; // output head is the embedding table
  Activation act = Activation::SiLU;
  float query_scale = 0.f;      // q.k scale

  RopeConfig rope;              // global layers
  RopeConfig rope_local;        // sliding-window layers (Gemma 3's second base)
  int sliding_window = 0;
  std::vector<bool> layer_sliding;  // per layer
};

// From a GGUF file's metadata or an HF directory's config.json. Throws Error(kUnsupported)
// for an unknown architecture or a feature brisk does not run (yarn rope, softcapping), and
// Error(kFormat) naming the key and value for a missing or absurd one (hparams_check.hpp),
// including per-layer tensors that disagree with the layer count.
HParams hparams_from_checkpoint(const CheckpointIndex& ckpt);

// The block switches of an architecture named as GGUF names it ("llama", "qwen2", ...), the
// rest of HParams left at its defaults; throws Error(kUnsupported) for an unknown name.
HParams arch_switches(const std::string& gguf_arch);

const char* arch_name(Arch arch);
// The built-in chat template (src/template/builtin_templates.cpp) for a checkpoint that carries none.
const char* default_chat_template(Arch arch);

}  // namespace brisk
