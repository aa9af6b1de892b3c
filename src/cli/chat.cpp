// brisk chat: an interactive conversation in the terminal with the model's own chat
// template (as llama-cli's conversation mode or `ollama run`): answers stream, the history
// is kept across turns and trimmed, oldest turns first, when it would not fit the context;
// Ctrl-C stops an answer and keeps the session. Without a terminal on standard input each
// line is one turn, so `printf 'hi\nmore\n' | brisk chat` is a scripted conversation.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "brisk/brisk.hpp"
#include "cli/chat_history.hpp"
#include "cli/line_input.hpp"
#include "cli/options.hpp"
#include "cli/verbs.hpp"

namespace brisk::cli {
namespace {

struct ChatOptions {
  std::string model;
  std::string system;
  int n = 0;  // tokens per answer at most (0: as many as the context leaves)
  int64_t ctx = 0;
  LoadOptions load;
  SamplingParams sampling;
};

constexpr const char* kHelp =
    "  /system TEXT  set the system prompt (empty: none)\n"
    "  /reset        forget the conversation (the system prompt stays)\n"
    "  /save FILE    write the conversation as a JSON list of messages\n"
    "  /load FILE    read one back (replacing this one)\n"
    "  /exit         leave (also Ctrl-D)\n"
    "  A line ending in \\ continues on the next; \"\"\" on a line of its own starts and ends a block.\n"
    "  Ctrl-C stops an answer.\n";

void note(const std::string& text) {
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

class ChatSession {
 public:
  ChatSession(Engine& engine, const ChatOptions& o, bool interactive)
      : engine_(engine), o_(o), interactive_(interactive), ctx_(engine.options().context) {
    history_.set_system(o.system);
  }
  int run();

 private:
  // A whole user message (continued lines joined); false at the end of input.
  bool read_message(std::string& text);
  bool command(const std::string& line);  // false: leave
  void turn(const std::string& text);
  bool fit(std::vector<int32_t>& prompt);  // renders and tokenizes the history, trimming it

  Engine& engine_;
  const ChatOptions& o_;
  bool interactive_;
  int64_t ctx_;
  ChatHistory history_;
  LineReader in_;
};

int ChatSession::run() {
  if (interactive_)
    note("brisk chat: " + std::filesystem::path(o_.model).filename().string() + " on " +
         engine_.model_info().backend + ", context " + std::to_string(ctx_) +
         " tokens. /help lists the commands; Ctrl-C stops an answer, Ctrl-D leaves.");
  std::string text;
  while (read_message(text)) {
    if (text.empty()) continue;
    if (text[0] == '/') {
      if (!command(text)) break;
      continue;
    }
    turn(text);
  }
  return 0;
}

bool ChatSession::read_message(std::string& text) {
  text.clear();
  bool block = false;
  for (;;) {
    if (interactive_) {
      std::fputs(block || !text.empty() ? "... " : "> ", stdout);
      std::fflush(stdout);
    }
    std::string line;
    const LineReader::Status st = in_.read(line);
    if (st == LineReader::Status::kEnd) return !text.empty();
    if (st == LineReader::Status::kInterrupted) {  // Ctrl-C at the prompt: a fresh prompt
      std::fputs("\n", stdout);
      text.clear(), block = false;
      continue;
    }
    if (line == "\"\"\"") {
      if (block) return true;
      block = true;
      continue;
    }
    if (block) {
      text += line + "\n";
      continue;
    }
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      text += line + "\n";
      continue;
    }
    text += line;
    return true;
  }
}

bool ChatSession::command(const std::string& line) {
  const size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
  arg.erase(0, arg.find_first_not_of(' '));
  try {
    if (name == "/exit" || name == "/quit" || name == "/bye") return false;
    if (name == "/help") {
      std::fputs(kHelp, stderr);
    } else if (name == "/system") {
      history_.set_system(arg);
      note(arg.empty() ? "(no system prompt)" : "(system prompt set)");
    } else if (name == "/reset") {
      history_.reset();
      note("(conversation cleared)");
    } else if (name == "/save" || name == "/load") {
      if (arg.empty()) return note("(" + name + " needs a file name)"), true;
      if (name == "/save") history_.save(arg), note("(saved " + std::to_string(history_.turns()) + " turns to " + arg + ")");
      else history_.load(arg), note("(loaded " + std::to_string(history_.turns()) + " turns from " + arg + ")");
    } else {
      note("(unknown command " + name + ": /help lists them)");
    }
  } catch (const Error& e) {
    note(std::string("error: ") + e.what());
  }
  return true;
}

bool ChatSession::fit(std::vector<int32_t>& prompt) {
  const int64_t reserve = o_.n > 0 ? std::min<int64_t>(o_.n, ctx_ / 2) : ctx_ / 4;  // room for the answer
  int dropped = 0;
  for (;;) {
    prompt = engine_.tokenize(engine_.render_chat(history_.json()), false, true);
    if (int64_t(prompt.size()) + reserve <= ctx_) break;
    if (!history_.drop_oldest_turn()) {
      history_.drop_last();
      note("error: this message alone (" + std::to_string(prompt.size()) + " tokens with the template) leaves no room for an "
           "answer in the context of " + std::to_string(ctx_) + " tokens (-c sets it)");
      return false;
    }
    ++dropped;
  }
  if (dropped > 0)
    note("(the conversation outgrew the context of " + std::to_string(ctx_) + " tokens: the oldest " +
         std::to_string(dropped) + (dropped == 1 ? " turn was" : " turns were") + " dropped)");
  return true;
}

void ChatSession::turn(const std::string& text) {
  history_.add("user", text);
  std::vector<int32_t> prompt;
  try {
    if (!fit(prompt)) return;
  } catch (const Error& e) {  // the template refused the conversation
    history_.drop_last();
    return note(std::string("error: ") + e.what());
  }
  GenerateOptions g;
  const int64_t room = ctx_ - int64_t(prompt.size());
  g.max_tokens = int(o_.n > 0 ? std::min<int64_t>(o_.n, room) : room);
  g.sampling = o_.sampling;
  g_interrupted.store(false);
  const Completion c = engine_.generate(std::move(prompt), g, [](const std::string& piece) {
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
    return !g_interrupted.load();
  });
  const bool stopped = g_interrupted.exchange(false) || c.result.finish_reason == "cancelled";
  std::fputs("\n", stdout);
  std::fflush(stdout);
  if (stopped) note("[stopped]");
  history_.add("assistant", c.text);
  print_speed_line(c.result, engine_.model_info().backend, o_.load.threads);
}

int chat(ChatOptions& o) {
  o.model = model_or_default(o.model);
  block_sigint();  // the engine's threads are started below: they never take a Ctrl-C
  auto model = load_with_progress(o.model, o.load);
  EngineOptions eo;
  eo.parallel = 1;
  eo.context = o.ctx;
  eo.max_queue = 0;
  Engine engine(model, eo);
  unblock_sigint();  // a Ctrl-C during the load ends the process here, as it would have
  interrupt_on_sigint();
  if (!model_info(*model).has_tokenizer) throw Error(ErrorCode::kInvalidArgument, "the model has no tokenizer", o.model);
  ChatSession session(engine, o, isatty(STDIN_FILENO) != 0);
  return session.run();
}

}  // namespace

Action add_chat(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  app.add_option("-m,--model", o->model, "GGUF file or HF directory (default: the model scripts/setup installed)");
  app.add_option("-s,--system", o->system, "system prompt (also /system TEXT)");
  app.add_option("-n,--n-predict", o->n, "tokens per answer at most (0: what the context leaves)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("-c,--ctx", o->ctx, "context length (0: min(trained, 4096))")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 24));
  add_threads_option(app, o->load.threads);
  add_sampling_options(app, o->sampling);
  add_chat_template_option(app, o->load.chat_template);
  add_device_option(app, o->load.device, "cpu, cuda, cuda:N or auto (the GPU when one works)");
  return [o]() { return chat(*o); };
}

}  // namespace brisk::cli
