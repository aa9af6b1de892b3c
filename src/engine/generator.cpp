#include "engine/generator.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

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

Session::~Session() {
  runner_.reset();
  model_.transformer().free_kv_cache(kv_);
}

void Session::check_prompt(const std::vector<int32_t>& prompt) const {
  if (prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty", "prompt");
  if (int64_t(prompt.size()) >= ctx_)
    throw Error(ErrorCode::kLimit, "the prompt has " + std::to_string(prompt.size()) +
                                       " tokens but the context holds " + std::to_string(ctx_) +
                                       " (leave room for at least one generated token)", "prompt");
}

void Session::prefill(const std::vector<int32_t>& prompt, float* last_logits, std::vector<float>* all) {
  check_prompt(prompt);
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
  Transformer& tf = model_.transformer();
  // On a backend that captures steps, sampling runs there too (only ids come back) unless a
  // penalty needs the history on the host.
  const SamplingParams& sp = opts.sampling;
  const bool penalties = (sp.repeat_penalty != 1.f && sp.repeat_last_n != 0) || sp.presence_penalty != 0.f ||
                         sp.frequency_penalty != 0.f;
  const bool on_device = tf.backend().can_capture() && !penalties;
  const uint64_t seed = sp.seed ? *sp.seed : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  auto device_params = [&](uint64_t step) {
    return row_sampling(sp.temperature, sp.top_k, sp.top_p, sp.min_p, seed, step);
  };
  std::vector<float> logits(static_cast<size_t>(V));
  Sampler sampler(sp, int32_t(V));
  std::vector<int32_t> history = prompt;

  double t0 = now_seconds();
  int32_t id = 0;
  if (on_device) {
    if (!runner_) runner_ = std::make_unique<ModelRunner>(tf, kv_, 1, kPrefillChunk);
    check_prompt(prompt);
    const int64_t n = int64_t(prompt.size());
    int64_t b = 0;
    for (; n - b > kPrefillChunk; b += kPrefillChunk) {
      std::vector<int32_t> pos(static_cast<size_t>(kPrefillChunk));
      std::iota(pos.begin(), pos.end(), int32_t(b));
      tf.forward(prompt.data() + b, pos.data(), kPrefillChunk, kv_, logits.data());
    }
    id = runner_->prefill(prompt.data() + b, n - b, int32_t(b), 0, device_params(0));
  } else {
    prefill(prompt, logits.data(), nullptr);
    id = sampler.sample(logits, history);
  }
  double t1 = now_seconds();
  r.prompt_seconds = t1 - t0;

  const Tokenizer* tok = model_.has_tokenizer() ? &model_.tokenizer() : nullptr;
  StopMatcher stops(opts.stop);
  std::unique_ptr<IncrementalDetokenizer> detok;
  if (tok) detok = std::make_unique<IncrementalDetokenizer>(*tok, true);
  auto emit = [&](const std::string& text) {
    r.text += text;
    return !on_text || text.empty() || on_text(text);
  };

  r.finish_reason = "length";
  int32_t pos = int32_t(prompt.size());
  for (int i = 0; i < opts.max_tokens; ++i) {
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
    if (on_device) {
      RowSampling p = device_params(uint64_t(i) + 1);
      int32_t next = 0;
      runner_->decode(&id, &pos, nullptr, &p, 1, &next);
      id = next;
    } else {
      tf.forward(&id, &pos, 1, kv_, logits.data());
      id = sampler.sample(logits, history);
    }
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
