// brisk logits: the logits of every position of a token sequence, as raw float32
// [n][vocab], for comparisons against reference implementations
// (tools/gpu_transformers_check.py runs it against transformers).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "brisk/brisk.hpp"
#include "cli/options.hpp"
#include "cli/verbs.hpp"

namespace brisk::cli {
namespace {

struct LogitsOptions {
  std::string model, tokens, out, device = "auto";
  bool exact = false;
};

int logits(const LogitsOptions& o) {
  std::vector<int32_t> ids;
  std::stringstream ss(o.tokens);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      ids.push_back(int32_t(std::stol(item)));
    } catch (const std::exception&) {
      throw Error(ErrorCode::kInvalidArgument, "bad token id '" + item + "'", "--tokens");
    }
  }
  LoadOptions lo;
  lo.device = o.device;
  lo.exact = o.exact;
  lo.tokenizer = false;
  auto model = load_model(o.model, lo);
  std::vector<float> all = score(*model, ids);
  std::ofstream f(o.out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(all.data()), std::streamsize(all.size() * 4));
  if (!f) throw Error(ErrorCode::kIo, "cannot write", o.out);
  const ModelInfo info = model_info(*model);
  std::printf("%zu x %lld logits on %s -> %s\n", ids.size(), (long long)info.vocab, info.backend.c_str(), o.out.c_str());
  return 0;
}

}  // namespace

Action add_logits(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  app.add_option("-m,--model", o->model, "GGUF file or HF directory")->required();
  app.add_option("--tokens", o->tokens, "comma-separated token ids")->required();
  app.add_option("-o,--out", o->out, "output file: float32 [n][vocab]")->required();
  add_device_option(app, o->device, "cpu, cuda, cuda:N or auto");
  app.add_flag("--exact", o->exact, "float32 everywhere (the oracle)");
  return [o]() { return logits(*o); };
}

}  // namespace brisk::cli
