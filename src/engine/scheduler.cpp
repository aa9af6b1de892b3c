#include "engine/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "base/error.hpp"
#include "engine/stop.hpp"

namespace brisk {
namespace {

// Decode tokens per forward pass at most: the CPU backend's int8 path computes each of up
// to this many tokens exactly as alone (backend.hpp), so batching never changes a result.
constexpr int kMaxDecodeBatch = 64;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Runs f; with the step trace on, adds its wall time in milliseconds to `ms` (no clock
// reads otherwise).
template <class F>
void timed(bool on, double& ms, F&& f) {
  if (!on) return f();
  const double t0 = now();
  f();
  ms += (now() - t0) * 1e3;
}

// log-softmax of one entry of a row, in double.
float token_logprob(const float* logits, int32_t vocab, int32_t id) {
  float mx = -INFINITY;
  for (int32_t i = 0; i < vocab; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - mx);
  return float(double(logits[id]) - mx - std::log(sum));
}

}  // namespace

struct Scheduler::Sequence {
  std::shared_ptr<Request> req;
  int slot = -1;
  std::vector<int32_t> blocks;  // the slot's block table row, while running
  int64_t cached = 0;     // prompt tokens found in the prefix cache
  int64_t prefilled = 0;  // prompt tokens in the cache
  int32_t next = -1;      // the last sampled token, not yet in the cache
  int64_t pos = 0;        // the position `next` goes to
  int generated = 0;
  uint64_t serial = 0;    // names it in the launched step, which may outlive it
  int row = -1;           // its row in the launched, uncollected decode step
  uint64_t seed = 0;
  std::unique_ptr<Sampler> host_sampler;  // penalties need the history on the host
  std::vector<int32_t> history;           // prompt + generated (host sampling only)
  std::unique_ptr<IncrementalDetokenizer> detok;
  std::unique_ptr<StopMatcher> stops;
  double t_submit = 0, t_start = 0, t_first = 0;

  bool prompt_done() const { return prefilled == int64_t(req->prompt.size()); }
  // Sampling settings for its next token, or (ahead = 1) for the one after a pending token.
  RowSampling params(int ahead = 0) const {
    const SamplingParams& sp = req->opts.sampling;
    return row_sampling(sp.temperature, sp.top_k, sp.top_p, sp.min_p, seed, uint64_t(generated + ahead));
  }
};

Scheduler::Scheduler(Model& model, const SchedulerOptions& opts) : model_(model), opts_(opts) {
  if (opts_.parallel < 1 || opts_.parallel > 1024)
    throw Error(ErrorCode::kInvalidArgument, "parallel must be in [1, 1024]", "--parallel");
  if (opts_.context < 2 || opts_.context > model.hparams().context)
    throw Error(ErrorCode::kInvalidArgument,
                "the context per sequence must be in [2, " + std::to_string(model.hparams().context) +
                    "] (the model's trained context)", "--ctx");
  if (opts_.prefill_chunk < 1) throw Error(ErrorCode::kInvalidArgument, "the prefill chunk must be >= 1");
  const int bs = opts_.block_size;
  if (bs < 1 || bs > 1024 || (bs & (bs - 1)) != 0)
    throw Error(ErrorCode::kInvalidArgument, "the KV block size must be a power of two up to 1024", "--kv-block");
  const int64_t per_seq = (opts_.context + bs - 1) / bs;
  const int64_t pool_blocks = opts_.kv_blocks > 0 ? opts_.kv_blocks : per_seq * opts_.parallel;
  if (pool_blocks > INT32_MAX) throw Error(ErrorCode::kInvalidArgument, "the KV pool is too large", "--kv-memory");
  vocab_ = int32_t(model.hparams().vocab);
  if (!opts_.trace_path.empty()) trace_.open(opts_.trace_path);  // before anything needs freeing
  Transformer& tf = model.transformer();
  kv_ = tf.new_kv_cache(opts_.context, opts_.parallel, pool_blocks, bs);
  try {  // (the destructor, which frees the cache, does not run if the constructor throws)
    pool_ = std::make_unique<KvBlockPool>(pool_blocks, bs);
    runner_ = std::make_unique<ModelRunner>(tf, kv_, std::min(opts_.parallel, kMaxDecodeBatch), opts_.prefill_chunk);
    if (opts_.warm_up) runner_->warm_up(std::min(opts_.prefill_chunk, opts_.context));
  } catch (...) {
    runner_.reset();
    tf.free_kv_cache(kv_);
    throw;
  }
  for (int s = opts_.parallel - 1; s >= 0; --s) free_slots_.push_back(s);
  host_row_.resize(size_t(vocab_));
  stats_.slots_total = opts_.parallel;
  stats_.kv_blocks_total = pool_blocks;
  stats_.kv_positions_total = pool_blocks * bs;
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  shutdown(false);
  runner_.reset();
  model_.transformer().free_kv_cache(kv_);
}

bool Scheduler::submit(std::shared_ptr<Request> r) {
  if (r->prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty", "prompt");
  const int64_t n = int64_t(r->prompt.size());
  if (n >= opts_.context)
    throw Error(ErrorCode::kInvalidArgument,
                "the prompt has " + std::to_string(n) + " tokens but the context is " + std::to_string(opts_.context) +
                    " tokens, which leaves no room to generate",
                "messages");
  for (int32_t id : r->prompt)
    if (id < 0 || id >= vocab_) throw Error(ErrorCode::kInvalidArgument, "token id out of range", "prompt");
  validate(r->opts.sampling);
  if (r->opts.max_tokens < 0) throw Error(ErrorCode::kInvalidArgument, "max_tokens must be >= 0", "max_tokens");
  if (r->logprobs > 20) throw Error(ErrorCode::kInvalidArgument, "top_logprobs must be at most 20", "top_logprobs");
  if (const int64_t need = blocks_needed(*r); need > pool_->total())
    throw Error(ErrorCode::kInvalidArgument,
                "the request needs " + std::to_string(need * opts_.block_size) + " KV positions (prompt + max_tokens) "
                "but the server's whole KV pool holds " + std::to_string(pool_->total() * opts_.block_size) +
                    "; ask for fewer max_tokens",
                "max_tokens");

  auto s = std::make_unique<Sequence>();
  s->req = std::move(r);
  const SamplingParams& sp = s->req->opts.sampling;
  s->seed = sp.seed ? *sp.seed : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  s->t_submit = now();
  std::lock_guard<std::mutex> lock(mu_);
  // Room: a free slot, or a place in the queue behind the running batch.
  if (stopping_ || pending_ >= opts_.max_queue + size_t(opts_.parallel - stats_.slots_used)) return false;
  inbox_.push_back(std::move(s));
  stats_.waiting = ++pending_;
  wake_.notify_one();
  return true;
}

void Scheduler::shutdown(bool drain) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    drain_ = drain;
    wake_.notify_one();
  }
  thread_.join();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !running_.empty() || !waiting_.empty(); });
      while (!inbox_.empty()) {
        waiting_.push_back(std::move(inbox_.front()));
        inbox_.pop_front();
      }
      if (stopping_) {
        for (auto& s : waiting_) s->req->cancelled = true;
        if (!drain_)
          for (auto& s : running_) s->req->cancelled = true;
        if (running_.empty() && waiting_.empty()) return;
      }
    }
    try {
      step();
    } catch (const std::exception& e) {  // a backend failure: fail what was running, keep serving
      fail_running(e.what());
    }
  }
}

bool Scheduler::step() {
  rec_ = StepRecord{};
  if (trace_.on()) rec_.t = trace_.clock();
  drop_cancelled();
  admit();
  prefill_one();
  decode_all();
  publish_stats();
  if (trace_.on() && (rec_.prefill_parts > 0 || rec_.decode_rows > 0 || rec_.collect_ms > 0)) {
    rec_.waiting = int64_t(waiting_.size());
    rec_.running = int64_t(running_.size());
    rec_.step_ms = (trace_.clock() - rec_.t) * 1e3;
    trace_.write(rec_);
  }
  return true;
}

int64_t Scheduler::blocks_needed(const Request& r) const {
  const int64_t positions = std::min<int64_t>(int64_t(r.prompt.size()) + std::max(r.opts.max_tokens, 0), opts_.context);
  return pool_->blocks_for(positions);
}

void Scheduler::publish_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.kv_positions_used = 0;
  for (const auto& s : running_) stats_.kv_positions_used += s->prefilled + s->generated;
  stats_.kv_blocks_used = pool_->used();
  stats_.kv_blocks_cached = pool_->cached();
}

void Scheduler::drop_cancelled() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->req->cancelled) {
      finish(**it, "cancelled");
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& s : running_)
    if (s->req->cancelled) finish(*s, "cancelled");
  std::erase_if(running_, [](const auto& s) { return s->slot < 0; });
}

void Scheduler::admit() {
  while (!free_slots_.empty() && !waiting_.empty()) {
    // Its blocks: the cached ones of its prompt's prefix (never the block of the last prompt
    // token, whose logits the prefill must produce), then fresh ones. In order of arrival:
    // when the pool cannot give the first waiting request its blocks, it and those behind it
    // wait for running sequences to end.
    const std::vector<int32_t>& prompt = waiting_.front()->req->prompt;
    std::vector<int32_t> blocks;
    if (opts_.prefix_cache) blocks = pool_->match_prefix(prompt, (int64_t(prompt.size()) - 1) / opts_.block_size);
    const int64_t fresh = blocks_needed(*waiting_.front()->req) - int64_t(blocks.size());
    if (fresh > pool_->available()) {
      pool_->release(blocks);
      break;
    }
    const int64_t cached = int64_t(blocks.size()) * opts_.block_size;
    const std::vector<int32_t> more = pool_->allocate(fresh);
    blocks.insert(blocks.end(), more.begin(), more.end());
    auto s = std::move(waiting_.front());
    waiting_.pop_front();
    s->slot = free_slots_.back();
    s->serial = ++serials_;
    free_slots_.pop_back();
    s->blocks = std::move(blocks);
    s->cached = s->prefilled = cached;
    model_.transformer().backend().set_kv_blocks(kv_, s->slot, s->blocks.data(), int(s->blocks.size()));
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.waiting = --pending_;
      stats_.running = size_t(++stats_.slots_used);
      if (opts_.prefix_cache) {
        ++stats_.prefix_cache_queries;
        stats_.prefix_cache_hits += cached > 0;
        stats_.prefix_cache_hit_tokens += uint64_t(cached);
      }
    }
    s->t_start = now();
    const Request& r = *s->req;
    const SamplingParams& sp = r.opts.sampling;
    const bool penalties = (sp.repeat_penalty != 1.f && sp.repeat_last_n != 0) || sp.presence_penalty != 0.f ||
                           sp.frequency_penalty != 0.f;
    if (penalties) {
      SamplingParams seeded = sp;
      seeded.seed = s->seed;
      s->host_sampler = std::make_unique<Sampler>(seeded, vocab_);
      s->history = r.prompt;
    }
    if (model_.has_tokenizer()) s->detok = std::make_unique<IncrementalDetokenizer>(model_.tokenizer(), true);
    s->stops = std::make_unique<StopMatcher>(r.opts.stop);
    running_.push_back(std::move(s));
    ++rec_.admitted;
  }
}

bool Scheduler::needs_host_logits(const Sequence& s) const { return s.host_sampler || s.req->logprobs >= 0; }

// Up to prefill_chunk prompt tokens this step, from the sequences still prefilling in
// arrival order (at most prefill_seqs of them, in one forward pass), so decode steps keep
// flowing between chunks.
void Scheduler::prefill_one() {
  std::vector<ModelRunner::PrefillPart> parts;
  std::vector<Sequence*> seqs;
  int64_t budget = opts_.prefill_chunk;
  const size_t max_parts = size_t(std::clamp(opts_.prefill_seqs, 1, runner_->max_batch()));
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (budget == 0 || parts.size() == max_parts) break;
    if (s.slot < 0 || s.prompt_done()) continue;
    const std::vector<int32_t>& prompt = s.req->prompt;
    const int64_t n = std::min(budget, int64_t(prompt.size()) - s.prefilled);
    const bool last = s.prefilled + n == int64_t(prompt.size());
    parts.push_back({prompt.data() + s.prefilled, n, int32_t(s.prefilled), s.slot, last, s.params()});
    seqs.push_back(&s);
    budget -= n;
  }
  if (parts.empty()) return;
  std::vector<int32_t> ids;
  timed(trace_.on(), rec_.prefill_ms, [&] { ids = runner_->prefill(parts); });
  rec_.prefill_parts = int64_t(parts.size());
  for (const auto& p : parts) rec_.prefill_tokens += p.n, rec_.first_tokens += p.sample;
  size_t row = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    Sequence& s = *seqs[i];
    const std::vector<int32_t>& prompt = s.req->prompt;
    s.prefilled += parts[i].n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.prompt_tokens += uint64_t(parts[i].n);
    }
    if (!s.prompt_done()) continue;
    if (opts_.prefix_cache) pool_->publish(s.blocks, prompt, int64_t(prompt.size()) / opts_.block_size);
    s.pos = s.prefilled;
    const float* logits = nullptr;
    if (needs_host_logits(s)) {
      model_.transformer().backend().to_host(runner_->logits() + int64_t(row) * vocab_, host_row_.data(), vocab_);
      logits = host_row_.data();
    }
    const int32_t id = ids.at(row++);
    if (s.req->opts.max_tokens == 0) finish(s, "length");
    else accept(s, id, logits);
  }
  std::erase_if(running_, [](const auto& s) { return s->slot < 0; });
}

// One decode token for every sequence past its prompt. Where no sequence needs its logits
// on the host, steps overlap the host's work: the step launched last time is collected,
// the next is launched at once (a sequence's token from that step is taken on the device),
// and only then are the collected ids handed out (detokenizing, stop strings, streaming).
// A sequence that ends with a collected token has one wasted row in the next step, which
// writes only to its own KV blocks (the stream orders that before any reuse of them).
void Scheduler::decode_all() {
  const std::vector<uint64_t> done = std::move(flight_);
  flight_.clear();
  std::vector<int32_t> done_ids(done.size());
  if (!done.empty()) timed(trace_.on(), rec_.collect_ms, [&] { runner_->collect(done_ids.data()); });

  std::vector<Sequence*> next;
  bool host_logits = false;
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (s.slot < 0 || !s.prompt_done()) continue;
    const bool pending = s.row >= 0;
    if (!pending && s.next < 0) continue;
    // A pending token that is its last (max_tokens, the context) ends it for sure.
    if (pending && (s.generated + 1 >= s.req->opts.max_tokens || s.pos + 1 >= opts_.context)) continue;
    next.push_back(&s);
    host_logits |= needs_host_logits(s);
  }
  if (!host_logits && !next.empty() && int(next.size()) <= runner_->max_batch()) {
    launch_decode(next);
    rec_.decode_rows = int64_t(next.size());
    timed(trace_.on(), rec_.hand_out_ms, [&] { hand_out(done, done_ids); });
    return;
  }
  // Synchronous steps: hand out what was collected, then decode with the host reading the
  // logits each sequence needs right after its step.
  timed(trace_.on(), rec_.hand_out_ms, [&] { hand_out(done, done_ids); });
  for (auto& s : running_) s->row = -1;
  std::vector<Sequence*> batch;
  for (auto& s : running_)
    if (s->slot >= 0 && s->prompt_done() && s->next >= 0) batch.push_back(s.get());
  for (size_t b0 = 0; b0 < batch.size(); b0 += size_t(runner_->max_batch())) {
    const int b = int(std::min<size_t>(size_t(runner_->max_batch()), batch.size() - b0));
    std::vector<Sequence*> part(batch.begin() + ptrdiff_t(b0), batch.begin() + ptrdiff_t(b0) + b);
    launch_decode(part);
    rec_.decode_rows += b;
    std::vector<int32_t> ids(static_cast<size_t>(b));
    timed(trace_.on(), rec_.collect_ms, [&] { runner_->collect(ids.data()); });
    flight_.clear();
    for (int i = 0; i < b; ++i) {
      Sequence& s = *part[size_t(i)];
      s.row = -1;
      s.pos += 1;
      const float* row = nullptr;
      if (needs_host_logits(s)) {
        model_.transformer().backend().to_host(runner_->logits() + int64_t(i) * vocab_, host_row_.data(), vocab_);
        row = host_row_.data();
      }
      accept(s, ids[size_t(i)], row);
    }
  }
  std::erase_if(running_, [](const auto& s) { return s->slot < 0; });
}

// Launches one decode step over `batch`: a sequence whose last token is still on the device
// (row >= 0) takes it from there and decodes at the position after it.
void Scheduler::launch_decode(const std::vector<Sequence*>& batch) {
  const auto n = batch.size();
  std::vector<int32_t> tokens(n), from(n), pos(n), seqs(n);
  std::vector<RowSampling> params(n);
  for (size_t i = 0; i < n; ++i) {
    const Sequence& s = *batch[i];
    const bool pending = s.row >= 0;
    tokens[i] = pending ? 0 : s.next;
    from[i] = s.row;
    pos[i] = int32_t(s.pos + (pending ? 1 : 0));
    seqs[i] = s.slot;
    params[i] = s.params(pending ? 1 : 0);
  }
  runner_->launch(tokens.data(), from.data(), pos.data(), seqs.data(), params.data(), int(n));
  for (auto& s : running_) s->row = -1;
  flight_.resize(n);
  for (size_t i = 0; i < n; ++i) batch[i]->row = int(i), flight_[i] = batch[i]->serial;
}

// Hands each collected id to its sequence, unless the sequence ended meanwhile.
void Scheduler::hand_out(const std::vector<uint64_t>& serials, const std::vector<int32_t>& ids) {
  if (serials.empty()) return;
  std::map<uint64_t, Sequence*> by_serial;
  for (auto& s : running_)
    if (s->slot >= 0) by_serial[s->serial] = s.get();
  for (size_t i = 0; i < serials.size(); ++i) {
    auto it = by_serial.find(serials[i]);
    if (it == by_serial.end() || it->second->slot < 0) continue;
    Sequence& s = *it->second;
    s.pos += 1;
    accept(s, ids[i], nullptr);
  }
  std::erase_if(running_, [](const auto& s) { return s->slot < 0; });
}

void Scheduler::accept(Sequence& s, int32_t id, const float* logits) {
  const Request& r = *s.req;
  if (s.host_sampler) id = s.host_sampler->sample(std::span<const float>(logits, size_t(vocab_)), s.history);
  if (s.generated == 0) s.t_first = now();
  const bool eos = !r.opts.ignore_eos && model_.has_tokenizer() && model_.tokenizer().is_eos(id);
  if (eos) return finish(s, "stop");
  ++s.generated;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.generated_tokens;
  }
  if (s.host_sampler) s.history.push_back(id);
  TokenEvent ev;
  ev.id = id;
  StopResult stop;
  if (s.detok) stop = s.stops->feed(s.detok->push(id));
  ev.text = stop.text;
  if (r.logprobs >= 0 && logits) {
    ev.logprob = token_logprob(logits, vocab_, id);
    ev.top = top_logprobs(std::span<const float>(logits, size_t(vocab_)), r.logprobs);
  }
  if (r.on_token) r.on_token(ev);
  if (stop.stopped) return finish(s, "stop");
  if (s.generated >= r.opts.max_tokens) return finish(s, "length");
  if (s.pos >= opts_.context) return finish(s, "length");  // no room for the next token
  s.next = id;
}

void Scheduler::finish(Sequence& s, const std::string& reason, const std::string& error) {
  RequestResult res;
  res.finish_reason = reason;
  res.error = error;
  if (reason != "stop" && reason != "error" && s.detok && s.stops) {  // release held-back text
    StopResult tail = s.stops->feed(s.detok->flush());
    res.tail_text = tail.text;
    if (tail.stopped) res.finish_reason = "stop";
    else res.tail_text += s.stops->flush();
  }
  if (reason == "cancelled") res.tail_text.clear();
  res.prompt_tokens = int64_t(s.req->prompt.size());
  res.cached_tokens = s.cached;
  res.completion_tokens = s.generated;
  const double t = now();
  res.queue_seconds = (s.t_start > 0 ? s.t_start : t) - s.t_submit;
  res.ttft_seconds = s.t_first > 0 ? s.t_first - s.t_submit : 0;
  res.total_seconds = t - s.t_submit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.finished[res.finish_reason];
    if (s.slot >= 0) {
      stats_.running = size_t(--stats_.slots_used);
      free_slots_.push_back(s.slot);
      pool_->release(s.blocks);
      s.blocks.clear();
      // Counted before on_done, so a client that sees its end also sees the blocks back.
      stats_.kv_blocks_used = pool_->used();
      stats_.kv_blocks_cached = pool_->cached();
    } else {
      stats_.waiting = --pending_;  // it never got a slot
    }
  }

  s.slot = -1;
  s.next = -1;
  if (s.req->on_done) s.req->on_done(res);
}

void Scheduler::fail_running(const std::string& error) {
  flight_.clear();
  runner_->abandon();
  for (auto& s : running_)
    if (s->slot >= 0) finish(*s, "error", error);
  running_.clear();
}

}  // namespace brisk
