#include "engine/generator.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "base/error.hpp"
#include "engine/stop.hpp"

namespace brisk {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Session::Session(Model& model, int64_t ctx) : model_(model), ctx_(ctx) {
  const int64_t trained = model.hparams().context;
  if (ctx_ <= 0) ctx_ = std::min<int64_t>(trained, 4096);
  if (ctx_ > trained)
    throw Error(ErrorCode::kInvalidArgument, "context " + std::to_string(ctx_) + " exceeds the model's trained context of " +
                                                 std::to_string(trained));
  kv_ = model_.transformer().new_kv_cache(ctx_);
}

Session::~Session() { model_.transformer().free_kv_cache(kv_); }

void Session::prefill(const std::vector<int32_t>& prompt, float* last_logits, std::vector<float>* all) {
  if (prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty", "prompt");
  if (int64_t(prompt.size()) >= ctx_)
    throw Error(ErrorCode::kLimit, "the prompt has " + std::to_string(prompt.size()) +
                                       " tokens but the context holds " + std::to_string(ctx_) +
                                       " (leave room for at least one generated token)", "prompt");
  const int64_t V = model_.hparams().vocab;
  if (all) all->resize(prompt.size() * size_t(V));
  std::vector<int32_t> pos(prompt.size());
  std::iota(pos.begin(), pos.end(), 0);
  for (int64_t b = 0; b < int64_t(prompt.size()); b += kPrefillChunk) {
    int64_t n = std::min<int64_t>(kPrefillChunk, int64_t(prompt.size()) - b);
    bool last = b + n == int64_t(prompt.size());
    float* out = all ? all->data() + b * V : last_logits;
    model_.transformer().forward(prompt.data() + b, pos.data() + b, n, kv_, out, all != nullptr);
    if (all && last) std::copy(all->end() - V, all->end(), last_logits);
  }
}

std::vector<float> Session::prompt_logits(const std::vector<int32_t>& prompt) {
  std::vector<float> all, last(static_cast<size_t>(model_.hparams().vocab));
  prefill(prompt, last.data(), &all);
  return all;
}

GenerateResult Session::generate(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                 const std::function<bool(const std::string&)>& on_text) {
  validate(opts.sampling);
  if (opts.max_tokens < 0) throw Error(ErrorCode::kInvalidArgument, "max_tokens must be >= 0", "max_tokens");
  const int64_t V = model_.hparams().vocab;
  GenerateResult r;
  r.prompt_tokens = int64_t(prompt.size());
  std::vector<float> logits(static_cast<size_t>(V));
  double t0 = now_seconds();
  prefill(prompt, logits.data(), nullptr);
  double t1 = now_seconds();
  r.prompt_seconds = t1 - t0;

  const Tokenizer* tok = model_.has_tokenizer() ? &model_.tokenizer() : nullptr;
  Sampler sampler(opts.sampling, int32_t(V));
  StopMatcher stops(opts.stop);
  std::unique_ptr<IncrementalDetokenizer> detok;
  if (tok) detok = std::make_unique<IncrementalDetokenizer>(*tok, true);
  std::vector<int32_t> history = prompt;
  auto emit = [&](const std::string& text) {
    r.text += text;
    return !on_text || text.empty() || on_text(text);
  };

  r.finish_reason = "length";
  int32_t pos = int32_t(prompt.size());
  for (int i = 0; i < opts.max_tokens; ++i) {
    int32_t id = sampler.sample(logits, history);
    if (tok && !opts.ignore_eos && tok->is_eos(id)) {
      r.finish_reason = "stop";
      break;
    }
    r.tokens.push_back(id);
    history.push_back(id);
    if (detok) {
      StopResult s = stops.feed(detok->push(id));
      if (!emit(s.text)) {
        r.finish_reason = "cancelled";
        break;
      }
      if (s.stopped) {
        r.finish_reason = "stop";
        break;
      }
    }
    if (i + 1 == opts.max_tokens) break;
    if (pos >= ctx_) {  // the cache is full: the next token has nowhere to go
      r.finish_reason = "length";
      break;
    }
    model_.transformer().forward(&id, &pos, 1, kv_, logits.data());
    ++pos;
  }
  if (detok && r.finish_reason != "stop" && r.finish_reason != "cancelled") {
    StopResult s = stops.feed(detok->flush());
    emit(s.text);
    if (!s.stopped) emit(stops.flush());
    else r.finish_reason = "stop";
  }
  r.generate_seconds = now_seconds() - t1;
  return r;
}

}  // namespace brisk
