// brisk inspect: what a checkpoint holds, without running it.
#include <cstdio>

#include "cli/verbs.hpp"
#include "format/checkpoint.hpp"
#include "model/hparams.hpp"

namespace brisk::cli {

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

Action add_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  app.add_option("model", *path, "GGUF file or HF directory")->required();
  app.add_flag("--all-metadata", *all, "print every metadata key (long arrays summarised)");
  return [=]() {
    auto ckpt = open_checkpoint(*path);
    HParams hp = hparams_from_checkpoint(*ckpt);
    std::printf("file:          %s (%s)\n", ckpt->path.c_str(), ckpt->format.c_str());
    std::printf("architecture:  %s\n", hp.arch_name.c_str());
    std::printf("vocab:         %lld\n", (long long)hp.vocab);
    std::printf("hidden:        %lld\n", (long long)hp.hidden);
    std::printf("layers:        %d\n", hp.n_layers);
    std::printf("heads:         %d (kv %d, head dim %d)\n", hp.n_heads, hp.n_kv_heads, hp.head_dim);
    std::printf("ffn:           %lld\n", (long long)hp.ffn);
    std::printf("context:       %lld\n", (long long)hp.context);
    std::printf("norm eps:      %g%s\n", hp.norm_eps, hp.norm_plus_one ? " (scale 1 + w)" : "");
    std::printf("rope:          theta %g, %s pairs%s\n", hp.rope.theta,
                hp.rope.style == RopeStyle::Half ? "rotate-half" : "interleaved",
                hp.rope.llama3_factor > 0 ? ", llama3 scaling" : "");
    int sliding = 0;
    for (bool s : hp.layer_sliding) sliding += s;
    if (hp.sliding_window)
      std::printf("sliding:       window %d on %d of %d layers (local theta %g)\n", hp.sliding_window, sliding,
                  hp.n_layers, hp.rope_local.theta);
    std::printf("switches:      qkv_bias=%d qk_norm=%d post_norms=%d embed_scale=%d tied=%d act=%s\n", hp.qkv_bias,
                hp.qk_norm, hp.post_norms, hp.embed_scale, hp.tied_embeddings,
                hp.act == Activation::SiLU ? "silu" : "gelu_tanh");
    if (*all) {
      for (const auto& [k, v] : ckpt->metadata) {
        if (v.is_array())
          std::printf("  %s: array of %zu\n", k.c_str(), v.array_size());
        else if (v.is_string())
          std::printf("  %s: %.80s\n", k.c_str(), v.as_string().c_str());
        else
          std::printf("  %s: %g\n", k.c_str(), v.as_f64());
      }
    }
    uint64_t total = 0;
    std::printf("\n%-48s %-6s %-20s %s\n", "tensor", "dtype", "shape", "size");
    for (const auto& t : ckpt->tensors) {
      total += t.nbytes;
      std::printf("%-48s %-6s %-20s %s\n", t.name.c_str(), dtype_name(t.dtype), shape_string(t.shape).c_str(),
                  human_bytes(double(t.nbytes)).c_str());
    }
    std::printf("\n%zu tensors, %s\n", ckpt->tensors.size(), human_bytes(double(total)).c_str());
    return 0;
  };
}

}  // namespace brisk::cli
