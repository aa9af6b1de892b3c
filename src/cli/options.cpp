#include "cli/options.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "brisk/brisk.hpp"
#include "cli/load_progress.hpp"
#include "cli/verbs.hpp"

namespace brisk::cli {

CLI::Validator above(double low, double high) {
  return CLI::Validator(
      [low, high](std::string& v) -> std::string {
        double x = 0;
        if (CLI::detail::lexical_cast(v, x) && x > low && x <= high) return "";
        return "Value " + v + " not in range (" + CLI::detail::to_string(low) + ", " + CLI::detail::to_string(high) + "]";
      },
      "NUMBER");
}

CLI::Validator power_of_two(int64_t max) {
  return CLI::Validator(
      [max](std::string& v) -> std::string {
        int64_t x = 0;
        if (CLI::detail::lexical_cast(v, x) && x >= 1 && x <= max && (x & (x - 1)) == 0) return "";
        return "Value " + v + " is not a power of two from 1 to " + std::to_string(max);
      },
      "POWER OF 2");
}

CLI::Option* add_threads_option(CLI::App& app, int& threads) {
  return app.add_option("-t,--threads", threads, "CPU threads (default: one per core)")
      ->check(CLI::Range(1, kMaxThreads));
}

CLI::Option* add_device_option(CLI::App& app, std::string& device, const char* help) {
  return app.add_option("--device", device, help)->capture_default_str()->check(CLI::Validator(
      [](std::string& d) -> std::string {
        if (d == "cpu" || d == "cuda" || d == "auto") return "";
        const std::string n = d.rfind("cuda:", 0) == 0 ? d.substr(5) : "";
        if (!n.empty() && n.size() <= 3 && n.find_first_not_of("0123456789") == std::string::npos) return "";
        return "unknown device '" + d + "': use cpu, cuda, cuda:N or auto";
      },
      "DEVICE"));
}

CLI::Option* add_chat_template_option(CLI::App& app, std::string& value) {
  std::string help = "chat template: a Jinja file (or a tokenizer_config.json), or a built-in:";
  std::string names;
  for (const auto& [name, format] : chat_template_names()) {
    help += "\n  " + name + ": " + format;
    names += (names.empty() ? "" : ", ") + name;
  }
  help += "\n(default: the model's own, else its architecture's built-in, with a warning)";
  return app.add_option("--chat-template", value, help)->check(CLI::Validator(
      [names](std::string& v) -> std::string {
        for (const auto& [name, format] : chat_template_names())
          if (v == name) return "";
        if (std::filesystem::is_regular_file(v)) return "";
        return "'" + v + "' is neither a file nor a built-in chat template (" + names + ")";
      },
      "FILE|NAME"));
}

std::string model_or_default(const std::string& model) {
  if (!model.empty()) return model;
  std::string path = default_model_path();
  if (!std::filesystem::exists(path))
    throw Error(ErrorCode::kIo, "no -m given and the default model is not installed: run scripts/setup", path);
  return path;
}

std::shared_ptr<LoadedModel> load_with_progress(const std::string& path, LoadOptions load) {
  auto progress = std::make_shared<LoadProgress>();
  load.progress = [progress](double f) { (*progress)(f); };
  auto model = load_model(path, load);
  const std::string note = model_info(*model).device_note;
  if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
  return model;
}

void add_sampling_options(CLI::App& app, SamplingParams& s) {
  app.add_option("--temp", s.temperature, "temperature (0: greedy)")->capture_default_str()->check(CLI::Range(0.f, 1000.f));
  app.add_option("--top-k", s.top_k, "top-k (0: off)")->capture_default_str()->check(CLI::Range(0, 1 << 24));
  app.add_option("--top-p", s.top_p, "top-p (1: off)")->capture_default_str()->check(above(0, 1));
  app.add_option("--min-p", s.min_p, "min-p (0: off)")->capture_default_str()->check(CLI::Range(0.f, 1.f));
  app.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1: off)")
      ->capture_default_str()
      ->check(above(0, 100));
  app.add_option("--repeat-last-n", s.repeat_last_n, "penalty window (-1: the whole context)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 24));
  app.add_option_function<uint64_t>("--seed", [&s](const uint64_t& v) { s.seed = v; }, "random seed");
}

void print_speed_line(const RequestResult& r, const std::string& backend, int threads) {
  const double prompt_s = r.ttft_seconds - r.queue_seconds, gen_s = r.total_seconds - r.ttft_seconds;
  const double pp = prompt_s > 0 ? double(r.prompt_tokens) / prompt_s : 0;
  // The first token comes from the prefill's logits, so decode speed counts the steps after it.
  const int64_t n = r.completion_tokens;
  const double tg = n > 1 && gen_s > 0 ? double(n - 1) / gen_s : 0;
  std::fprintf(stderr,
               "\nprompt: %lld tokens in %.3f s (%.1f tok/s) | generation: %lld tokens in %.3f s (%.1f tok/s) | %s, %d "
               "threads, finish: %s\n",
               (long long)r.prompt_tokens, prompt_s, pp, (long long)n, gen_s, tg, backend.c_str(),
               threads > 0 ? threads : int(std::thread::hardware_concurrency()), r.finish_reason.c_str());
}

void add_constraint_options(CLI::App& app, ConstraintFlags& flags) {
  app.add_option("--json-schema", flags.json_schema_file, "JSON Schema file: the output is JSON that it validates");
  app.add_option("--grammar", flags.grammar_file, "GBNF grammar file (llama.cpp's syntax): the output follows it");
  app.add_option("--regex", flags.regex, "regular expression: the output matches it");
}

namespace {
std::string read_text_file(const std::string& path, const char* option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot read the file", std::string(option) + " " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

OutputConstraint constraint_of(const ConstraintFlags& f) {
  using Kind = OutputConstraint::Kind;
  const int given = !f.json_schema_file.empty() + !f.grammar_file.empty() + !f.regex.empty();
  if (given > 1) throw Error(ErrorCode::kInvalidArgument, "give one of --json-schema, --grammar and --regex");
  if (!f.json_schema_file.empty())
    return OutputConstraint::of(Kind::JsonSchema, read_text_file(f.json_schema_file, "--json-schema"), true);
  if (!f.grammar_file.empty()) return OutputConstraint::of(Kind::Gbnf, read_text_file(f.grammar_file, "--grammar"), true);
  if (!f.regex.empty()) return OutputConstraint::of(Kind::Regex, f.regex, true);
  return {};
}

CLI::Option* add_cuda_tuning_options(CLI::App& app, LoadOptions& load) {
  app.add_flag("--no-pdl", [&load](int64_t) { load.pdl = false; },
               "CUDA: no programmatic dependent launch (to measure what it buys)");
  app.add_flag("--no-mmq", [&load](int64_t) { load.mmq = false; },
               "CUDA: quantized batches dequantize to bf16 instead of using the int8 or FP8 tensor cores (to compare)");
  return app.add_option("--decode-attention", load.decode_attention,
                        "CUDA: auto, or float to keep decode attention on the float kernel")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float"}));
}

}  // namespace brisk::cli
