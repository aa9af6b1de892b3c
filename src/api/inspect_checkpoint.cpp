// brisk::print_checkpoint (brisk/files.hpp): what a checkpoint holds, without running it.
#include <cstdio>

#include "brisk/files.hpp"
#include "format/checkpoint.hpp"
#include "model/hparams.hpp"

namespace brisk {

namespace {
std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}

}  // namespace

void print_checkpoint(const std::string& path, bool all_metadata, std::FILE* out) {
  auto ckpt = open_checkpoint(path);
  HParams hp = hparams_from_checkpoint(*ckpt);
  std::fprintf(out, "file:          %s (%s)\n", ckpt->path.c_str(), ckpt->format.c_str());
  std::fprintf(out, "architecture:  %s\n", hp.arch_name.c_str());
  std::fprintf(out, "vocab:         %lld\n", (long long)hp.vocab);
  std::fprintf(out, "hidden:        %lld\n", (long long)hp.hidden);
  std::fprintf(out, "layers:        %d\n", hp.n_layers);
  std::fprintf(out, "heads:         %d (kv %d, head dim %d)\n", hp.n_heads, hp.n_kv_heads, hp.head_dim);
  std::fprintf(out, "ffn:           %lld\n", (long long)hp.ffn);
  std::fprintf(out, "context:       %lld\n", (long long)hp.context);
  std::fprintf(out, "norm eps:      %g%s\n", hp.norm_eps, hp.norm_plus_one ? " (scale 1 + w)" : "");
  std::fprintf(out, "rope:          theta %g, %s pairs%s\n", hp.rope.theta,
              hp.rope.style == RopeStyle::Half ? "rotate-half" : "interleaved",
              hp.rope.llama3_factor > 0 ? ", llama3 scaling" : "");
  int sliding = 0;
  for (bool s : hp.layer_sliding) sliding += s;
  if (hp.sliding_window)
    std::fprintf(out, "sliding:       window %d on %d of %d layers (local theta %g)\n", hp.sliding_window, sliding,
                hp.n_layers, hp.rope_local.theta);
  std::fprintf(out, "switches:      qkv_bias=%d qk_norm=%d post_norms=%d embed_scale=%d tied=%d act=%s\n", hp.qkv_bias,
              hp.qk_norm, hp.post_norms, hp.embed_scale, hp.tied_embeddings,
              hp.act == Activation::SiLU ? "silu" : "gelu_tanh");
  if (all_metadata) {
    for (const auto& [k, v] : ckpt->metadata) {
      if (v.is_array())
        std::fprintf(out, "  %s: array of %zu\n", k.c_str(), v.array_size());
      else if (v.is_string())
        std::fprintf(out, "  %s: %.80s\n", k.c_str(), v.as_string().c_str());
      else
        std::fprintf(out, "  %s: %g\n", k.c_str(), v.as_f64());
    }
  }
  uint64_t total = 0;
  std::fprintf(out, "\n%-48s %-6s %-20s %s\n", "tensor", "dtype", "shape", "size");
  for (const auto& t : ckpt->tensors) {
    total += t.nbytes;
    std::fprintf(out, "%-48s %-6s %-20s %s\n", t.name.c_str(), dtype_name(t.dtype), shape_string(t.shape).c_str(),
                human_bytes(double(t.nbytes)).c_str());
  }
  std::fprintf(out, "\n%zu tensors, %s\n", ckpt->tensors.size(), human_bytes(double(total)).c_str());
}

}  // namespace brisk
