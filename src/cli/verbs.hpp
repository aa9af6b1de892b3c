// The verbs of the brisk command. Each registers its options on a CLI11 subcommand and
// returns the callback that runs it; main.cpp wires them together and turns brisk::Error
// into a one-line message and exit status 1.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace brisk::cli {

using Action = std::function<int()>;

Action add_run(CLI::App& app);
Action add_chat(CLI::App& app);
Action add_inspect(CLI::App& app);
Action add_gen_model(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_logits(CLI::App& app);
Action add_quantize(CLI::App& app);
Action add_serve(CLI::App& app);  // only when built with cpp-httplib (BRISK_WITH_SERVER)

// The model scripts/setup installs, used when -m is not given.
std::string default_model_path();

}  // namespace brisk::cli
