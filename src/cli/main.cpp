// The brisk command: one verb per file (run, serve, bench, inspect, ...), dispatched here.
// Usage errors (an unknown option, a value out of range) exit 2 with CLI11's message; any
// other failure exits 1 with one line saying what went wrong, never with an abort.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>

#include "base/error.hpp"
#include "cli/verbs.hpp"

namespace {

// An exception that escapes a thread of ours (or any other path to std::terminate) still
// ends the process with a message and status 1 rather than an abort.
[[noreturn]] void on_terminate() {
  const char* what = "an unexpected error";
  try {
    if (std::exception_ptr e = std::current_exception()) std::rethrow_exception(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk: %s\n", e.what());
    std::_Exit(1);
  } catch (...) {
  }
  std::fprintf(stderr, "brisk: %s\n", what);
  std::_Exit(1);
}

int run_verbs(int argc, char** argv) {
  CLI::App app{"brisk: a fast LLM inference engine"};
  app.require_subcommand(1);
  std::map<CLI::App*, brisk::cli::Action> actions;
  auto add = [&](const char* name, const char* help, brisk::cli::Action (*fn)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    actions[sub] = fn(*sub);
  };
  add("run", "generate text from a prompt", brisk::cli::add_run);
  add("chat", "talk with the model in the terminal, with its chat template", brisk::cli::add_chat);
  add("inspect", "show a checkpoint's architecture, hyperparameters and tensors", brisk::cli::add_inspect);
  add("bench", "measure prefill and decode speed against the device's limits", brisk::cli::add_bench);
  add("logits", "write the logits of every position of a token sequence (for reference checks)", brisk::cli::add_logits);
  add("quantize", "rewrite a GGUF file's matrices in another format (i8: packed int8 for the GPU)", brisk::cli::add_quantize);
#ifdef BRISK_WITH_SERVER
  add("serve", "serve the model over an OpenAI-compatible HTTP API", brisk::cli::add_serve);
#endif
  add("gen-model", "write a deterministic synthetic checkpoint with random weights", brisk::cli::add_gen_model);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is a ParseError too; CLI11's own codes are not 2
  }
  for (auto& [sub, action] : actions)
    if (sub->parsed()) return action();
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(on_terminate);
  try {
    return run_verbs(argc, argv);
  } catch (const std::exception& e) {  // brisk::Error included: its what() is the whole message
    std::fprintf(stderr, "brisk: %s\n", e.what());
    return 1;
  }
}
