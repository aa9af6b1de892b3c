// brisk quantize: the options of brisk::quantize_file (brisk/files.hpp), and its report.
#include <cstdio>
#include <memory>

#include "brisk/files.hpp"
#include "cli/options.hpp"
#include "cli/verbs.hpp"

namespace brisk::cli {

Action add_quantize(CLI::App& app) {
  auto o = std::make_shared<QuantizeRequest>();
  app.add_option("in", o->in, "input GGUF file")->required();
  app.add_option("out", o->out, "output GGUF file")->required();
  app.add_option("--type", o->type, "i8 (packed int8, per-row scales), fp8 (E4M3, per-row scales), q8_0, q4_k, q6_k, q5_k, q5_0, q4_0, bf16, f16")
      ->required()
      ->check(CLI::Validator(
          [](std::string& t) -> std::string { return is_weight_type(t) ? "" : "unknown type '" + t + "'"; }, "TYPE"));
  add_threads_option(app, o->threads);
  return [o]() {
    const QuantizeResult r = quantize_file(*o);
    std::printf("wrote %s: %d matrices as %s, %d tensors kept\n", o->out.c_str(), r.converted, r.type.c_str(), r.kept);
    return 0;
  };
}

}  // namespace brisk::cli
