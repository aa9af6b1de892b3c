// brisk gen-model: deterministic synthetic checkpoints for tests and benchmarks.
#include <cstdio>

#include "base/error.hpp"
#include "cli/verbs.hpp"
#include "synthetic/synthetic.hpp"

namespace brisk::cli {

Action add_gen_model(CLI::App& app) {
  auto spec = std::make_shared<SyntheticSpec>();
  auto dtype = std::make_shared<std::string>("f32");
  auto out = std::make_shared<std::string>();
  app.add_option("--arch", spec->arch, "llama, qwen2, qwen3 or gemma3")
      ->required()
      ->check(CLI::IsMember({"llama", "qwen2", "qwen3", "gemma3"}));
  app.add_option("--format", spec->format, "gguf (a file) or hf (a directory)")
      ->capture_default_str()
      ->check(CLI::IsMember({"gguf", "hf"}));
  app.add_option("--dtype", *dtype, "matrix dtype: f32 f16 bf16 (hf, gguf), fp8 (hf) or q8_0 q4_0 q5_0 q4_k q5_k q6_k (gguf)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& t) -> std::string { return dtype_from_name(t) ? "" : "unknown dtype '" + t + "'"; }, "DTYPE"));
  app.add_option("--size", spec->size, "tiny, small, or a real shape (qwen2.5-7b, llama3-8b, qwen3-8b, gemma3-270m, gemma3-27b)")
      ->capture_default_str();
  app.add_option("--fp8-scales", spec->fp8_scales, "with --dtype fp8: scales per tensor, channel or 128x128 block")
      ->capture_default_str()
      ->check(CLI::IsMember({"tensor", "channel", "block"}));
  app.add_option("--fp8-activations", spec->fp8_activations,
                 "with --dtype fp8: activation scales dynamic (per token) or static (an input_scale per matrix)")
      ->capture_default_str()
      ->check(CLI::IsMember({"dynamic", "static"}));
  app.add_option("--seed", spec->seed, "random seed")->capture_default_str();
  app.add_option("out", *out, "output file (gguf) or directory (hf)")->required();
  return [=]() {
    auto dt = dtype_from_name(*dtype);
    if (!dt) throw Error(ErrorCode::kInvalidArgument, "unknown dtype '" + *dtype + "'", "--dtype");
    spec->dtype = *dt;
    write_synthetic_checkpoint(*spec, *out);
    std::fprintf(stderr, "wrote %s %s %s (%s, seed %llu) to %s\n", spec->arch.c_str(), spec->size.c_str(),
                 spec->format.c_str(), dtype_name(*dt), (unsigned long long)spec->seed, out->c_str());
    return 0;
  };
}

}  // namespace brisk::cli
