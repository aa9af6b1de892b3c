// The public Engine over EngineCore: the model's tokenizer and chat template behind text
// calls, and the blocking conveniences built on submit().
#include <condition_variable>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "api/loaded_model.hpp"
#include "brisk/brisk.hpp"
#include "engine/engine_core.hpp"
#include "template/tool_format.hpp"

namespace brisk {
namespace {

class Handle : public RequestHandle {
 public:
  explicit Handle(std::shared_ptr<Request> r) : r_(std::move(r)) {}
  void cancel() override { r_->cancelled = true; }

 private:
  std::shared_ptr<Request> r_;
};

// The most bytes of text one token can stand for, with slack for normalisation (NFC can
// shrink text up to 3:1), or 0 when no bound holds (a vocabulary without a token for every
// byte may fold a run of unknown characters into one <unk>).
size_t bytes_per_token_bound(const Tokenizer& tok) {
  bool byte_covered[256] = {};
  size_t longest = 1;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    const std::string b = tok.token_bytes(id);
    if (b.size() == 1) byte_covered[static_cast<unsigned char>(b[0])] = true;
    longest = std::max(longest, b.size());
  }
  for (bool c : byte_covered)
    if (!c) return 0;
  return 3 * longest;
}

}  // namespace

struct Engine::Impl {
  std::shared_ptr<LoadedModel> lm;
  std::unique_ptr<EngineCore> core;
  size_t bytes_per_token = 0;
  std::optional<ChatFormat> chat_format;  // read from the template once (none: no template)
  const Tokenizer& tok() const { return lm->model->tokenizer(); }
};

std::unique_ptr<Engine> Engine::open(const std::string& path, const LoadOptions& load, const EngineOptions& options) {
  return std::make_unique<Engine>(load_model(path, load), options);
}

Engine::Engine(std::shared_ptr<LoadedModel> model, const EngineOptions& options) : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error(ErrorCode::kInvalidArgument, "no model");
  impl_->lm = std::move(model);
  impl_->core = std::make_unique<EngineCore>(*impl_->lm->model, options);
  if (impl_->lm->model->has_tokenizer()) impl_->bytes_per_token = bytes_per_token_bound(impl_->tok());
  try {
    impl_->chat_format = detect_chat_format(impl_->lm->model->chat_template().source());
  } catch (const Error&) {  // no template: chat calls say why when they are made
  }
}

Engine::~Engine() { shutdown(false); }

std::vector<int32_t> Engine::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  return impl_->tok().encode(text, add_special, parse_special);
}

std::string Engine::detokenize(const std::vector<int32_t>& ids) const { return impl_->tok().decode(ids, true); }

std::string Engine::token_bytes(int32_t id) const { return impl_->tok().token_bytes(id); }

std::string Engine::render_chat(const std::string& messages_json, const std::string& extra_json,
                                const std::atomic<bool>* cancel) const {
  using ojson = nlohmann::ordered_json;
  ojson messages, extra;
  try {
    messages = ojson::parse(messages_json);
    extra = ojson::parse(extra_json.empty() ? "{}" : extra_json);
  } catch (const ojson::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("chat messages are not valid JSON: ") + e.what(), "messages");
  }
  if (!messages.is_array()) throw Error(ErrorCode::kInvalidArgument, "chat messages must be a JSON array", "messages");
  if (!extra.is_object()) throw Error(ErrorCode::kInvalidArgument, "template variables must be a JSON object");
  const Tokenizer& tok = impl_->tok();
  if (!extra.contains("bos_token") && tok.bos_id() >= 0) extra["bos_token"] = tok.token_text(tok.bos_id());
  if (!extra.contains("eos_token") && !tok.eos_ids().empty()) extra["eos_token"] = tok.token_text(tok.eos_ids()[0]);
  jinja::RenderLimits limits;
  limits.cancel = cancel;
  const ChatFormat format = chat_format();
  const ojson tools = extra.contains("tools") ? extra["tools"] : ojson();
  if (!format.template_renders_tools) extra.erase("tools");
  return impl_->lm->model->chat_template().render(messages_for_template(messages, tools, format), true, extra, limits);
}

ChatFormat Engine::chat_format() const {
  if (!impl_->chat_format) (void)impl_->lm->model->chat_template();  // throws why there is none
  return impl_->chat_format.value_or(ChatFormat{});
}

OutputConstraint Engine::tool_call_constraint(const std::string& tools_json, const std::string& function,
                                              bool parallel) const {
  nlohmann::ordered_json tools;
  try {
    tools = nlohmann::ordered_json::parse(tools_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("tools are not valid JSON: ") + e.what(), "tools");
  }
  if (!tools.is_array()) throw Error(ErrorCode::kInvalidArgument, "tools must be a JSON list", "tools");
  return brisk::tool_call_constraint(chat_format(), tools, function, parallel);
}

size_t Engine::max_bytes_per_token() const { return impl_->bytes_per_token; }

std::shared_ptr<RequestHandle> Engine::submit(std::vector<int32_t> prompt, const GenerateOptions& options,
                                              TokenCallback on_token, DoneCallback on_done) {
  auto r = std::make_shared<Request>();
  r->prompt = std::move(prompt);
  r->opts = options;
  r->on_token = std::move(on_token);
  r->on_done = std::move(on_done);
  if (!impl_->core->submit(r)) return nullptr;
  return std::make_shared<Handle>(r);
}

Completion Engine::generate(std::vector<int32_t> prompt, const GenerateOptions& options, TextCallback on_text) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Completion c;
  };
  auto w = std::make_shared<Wait>();
  std::shared_ptr<RequestHandle> h;
  auto on_token = [w, on_text, &h](const TokenEvent& e) {
    w->c.tokens.push_back(e.id);
    w->c.text += e.text;
    if (on_text && !e.text.empty() && !on_text(e.text) && h) h->cancel();
  };
  auto on_done = [w, on_text](const RequestResult& r) {
    if (on_text && !r.tail_text.empty()) on_text(r.tail_text);
    std::lock_guard<std::mutex> lock(w->mu);
    w->c.text += r.tail_text;
    w->c.result = r;
    w->done = true;
    w->cv.notify_all();
  };
  h = submit(std::move(prompt), options, on_token, on_done);
  if (!h) throw Error(ErrorCode::kLimit, "the engine's queue is full or it is shutting down");
  std::unique_lock<std::mutex> lock(w->mu);
  w->cv.wait(lock, [&] { return w->done; });
  return std::move(w->c);
}

Completion Engine::generate(const std::string& prompt, const GenerateOptions& options, TextCallback on_text) {
  return generate(tokenize(prompt), options, std::move(on_text));
}

Completion Engine::chat(const std::string& messages_json, const GenerateOptions& options, TextCallback on_text) {
  return generate(tokenize(render_chat(messages_json), false, true), options, std::move(on_text));
}


EngineStats Engine::stats() const { return impl_->core->stats(); }
const EngineOptions& Engine::options() const { return impl_->core->options(); }
ModelInfo Engine::model_info() const { return impl_->lm->info; }
void Engine::shutdown(bool drain) {
  if (impl_ && impl_->core) impl_->core->shutdown(drain);
}

}  // namespace brisk
