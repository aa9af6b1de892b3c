// Option checks shared by the verbs. A value out of range is a usage error: CLI11 prints the
// option, the value and what it accepts, and brisk exits 2 before it loads anything.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "brisk/brisk.hpp"

namespace brisk::cli {

// More CPU threads than this is a typo, not a machine (each thread also costs a stack).
inline constexpr int kMaxThreads = 1024;

// A number in (low, high]: CLI::Range includes its low end.
CLI::Validator above(double low, double high);
// A power of two no larger than `max`.
CLI::Validator power_of_two(int64_t max);

// -t,--threads: 1 to kMaxThreads; left at 0 (one per core) when not given.
CLI::Option* add_threads_option(CLI::App& app, int& threads);
// cpu, cuda, cuda:N or auto.
CLI::Option* add_device_option(CLI::App& app, std::string& device, const char* help);
// --chat-template FILE|NAME: a built-in template's name or an existing file.
CLI::Option* add_chat_template_option(CLI::App& app, std::string& value);
// --decode-attention auto|float, --no-pdl and --no-mmq (CUDA kernels' switches, for measurements).
CLI::Option* add_cuda_tuning_options(CLI::App& app, LoadOptions& load);

// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n and --seed.
void add_sampling_options(CLI::App& app, SamplingParams& sampling);

// -m's value, or the model scripts/setup installed when none was given (an error naming
// scripts/setup when that is not there either).
std::string model_or_default(const std::string& model);
// load_model with a progress bar on a terminal; the backend's device note, if any, on stderr.
std::shared_ptr<LoadedModel> load_with_progress(const std::string& path, LoadOptions load);

// The line `brisk run` and `brisk chat` print to stderr after an answer: prompt and
// generation speed, the backend, threads (0: one per core) and why it ended.
void print_speed_line(const RequestResult& r, const std::string& backend, int threads);

// --json-schema FILE, --grammar FILE (GBNF) and --regex RE: structured output, at most one.
struct ConstraintFlags {
  std::string json_schema_file, grammar_file, regex;
};
void add_constraint_options(CLI::App& app, ConstraintFlags& flags);
// The constraint the flags give (Kind::None when none); reads the files.
OutputConstraint constraint_of(const ConstraintFlags& flags);

}  // namespace brisk::cli
