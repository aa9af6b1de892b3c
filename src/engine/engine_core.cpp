#include "engine/engine_core.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "base/error.hpp"

namespace brisk {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Runs f; when recording, adds its wall time in milliseconds to `ms` (no clock reads otherwise).
template <class F>
void timed(bool on, double& ms, F&& f) {
  if (!on) return f();
  const double t0 = now();
  f();
  ms += (now() - t0) * 1e3;
}

}  // namespace

EngineCore::EngineCore(Model& model, const EngineOptions& opts) : model_(model), opts_(opts) {
  vocab_ = int32_t(model.hparams().vocab);
  resolve_options();
  if (!opts_.trace_path.empty()) trace_.open(opts_.trace_path);
  recording_ = trace_.on() || bool(opts_.on_step);
  RunnerConfig rc;
  rc.context = opts_.context;
  rc.slots = opts_.parallel;
  rc.kv_blocks = opts_.kv_blocks;
  rc.block_size = opts_.kv_block_size;
  rc.max_batch = max_batch_;
  rc.min_scratch = opts_.prefill_chunk;
  runner_ = std::make_unique<ModelRunner>(model.transformer(), rc);
  if (opts_.warm_up) runner_->warm_up(std::min(opts_.prefill_chunk, opts_.context));
  blocks_ = std::make_unique<BlockManager>(opts_.kv_blocks, opts_.kv_block_size);
  sched_ = std::make_unique<Scheduler>(
      SchedulerLimits{opts_.parallel, opts_.context, opts_.prefill_chunk, std::min(opts_.prefill_seqs, max_batch_), opts_.prefix_cache},
      *blocks_);
  host_row_.resize(size_t(vocab_));
  stats_.slots_total = opts_.parallel;
  stats_.context = opts_.context;
  stats_.kv_blocks_total = opts_.kv_blocks;
  stats_.kv_positions_total = opts_.kv_blocks * opts_.kv_block_size;
  thread_ = std::thread([this] { loop(); });
}

// Every default in one place: the context from the model, the step shape from the
// backend, the pool from kv_blocks, kv_memory or parallel x context.
void EngineCore::resolve_options() {
  const int64_t trained = model_.hparams().context;
  Backend& be = model_.transformer().backend();
  const Backend::StepDefaults d = be.step_defaults();
  if (opts_.parallel < 1 || opts_.parallel > 1024)
    throw Error(ErrorCode::kInvalidArgument, "parallel must be in [1, 1024]", "parallel");
  if (opts_.context == 0) opts_.context = std::min<int64_t>(trained, 4096);
  if (opts_.context < 2 || opts_.context > trained)
    throw Error(ErrorCode::kInvalidArgument,
                "the context per sequence must be in [2, " + std::to_string(trained) + "] (the model's trained context)",
                "context");
  Backend::check_kv_block_size(opts_.kv_block_size);
  const int64_t bs = opts_.kv_block_size;
  if (opts_.kv_blocks == 0 && opts_.kv_memory > 0) {
    const HParams& hp = model_.hparams();
    const uint64_t per_block = be.kv_bytes_per_block(hp.n_layers, hp.n_kv_heads, hp.head_dim, int(bs));
    opts_.kv_blocks = int64_t(opts_.kv_memory / per_block);
    if (opts_.kv_blocks < 1)
      throw Error(ErrorCode::kInvalidArgument,
                  "the KV memory is smaller than one KV block (" + std::to_string(per_block) + " bytes)", "kv_memory");
  }
  if (opts_.kv_blocks == 0) opts_.kv_blocks = (opts_.context + bs - 1) / bs * opts_.parallel;
  if (opts_.kv_blocks < 1 || opts_.kv_blocks > INT32_MAX)
    throw Error(ErrorCode::kInvalidArgument, "the KV pool must hold between 1 and 2^31 blocks", "kv_blocks");
  if (opts_.prefill_chunk == 0) opts_.prefill_chunk = d.prefill_chunk;
  if (opts_.prefill_chunk < 1) throw Error(ErrorCode::kInvalidArgument, "the prefill chunk must be >= 1", "prefill_chunk");
  if (opts_.prefill_seqs == 0) opts_.prefill_seqs = d.prefill_seqs;
  if (opts_.prefill_seqs < 1) throw Error(ErrorCode::kInvalidArgument, "prefill_seqs must be >= 1", "prefill_seqs");
  if (opts_.warm_up < 0) opts_.warm_up = d.warm_up;
  max_batch_ = std::min(opts_.parallel, d.max_decode_rows);
}

EngineCore::~EngineCore() { shutdown(false); }

bool EngineCore::submit(std::shared_ptr<Request> r) {
  if (r->prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty", "prompt");
  const int64_t n = int64_t(r->prompt.size());
  if (n >= opts_.context)
    throw Error(ErrorCode::kInvalidArgument,
                "the prompt has " + std::to_string(n) + " tokens but the context is " + std::to_string(opts_.context) +
                    " tokens, which leaves no room to generate",
                "messages");
  for (int32_t id : r->prompt)
    if (id < 0 || id >= vocab_) throw Error(ErrorCode::kInvalidArgument, "token id out of range", "prompt");
  validate(r->opts.sampling, vocab_);
  if (r->opts.max_tokens < 0) throw Error(ErrorCode::kInvalidArgument, "max_tokens must be >= 0", "max_tokens");
  if (r->opts.logprobs > 20) throw Error(ErrorCode::kInvalidArgument, "top_logprobs must be at most 20", "top_logprobs");
  const int64_t positions = std::min<int64_t>(n + r->opts.max_tokens, opts_.context);
  if (blocks_->blocks_for(positions) > blocks_->total())
    throw Error(ErrorCode::kInvalidArgument,
                "the request needs " + std::to_string(positions) + " KV positions (prompt + max_tokens) but the whole "
                "KV pool holds " + std::to_string(blocks_->total() * opts_.kv_block_size) + "; ask for fewer max_tokens",
                "max_tokens");
  const SamplingParams& sp = r->opts.sampling;
  const uint64_t seed = sp.seed ? *sp.seed : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  auto s = std::make_unique<Sequence>(std::move(r), seed, model_.has_tokenizer() ? &model_.tokenizer() : nullptr);
  if (s->req->opts.constraint.kind != OutputConstraint::Kind::None) attach_constraint(*s);
  s->t_submit = now();
  std::lock_guard<std::mutex> lock(mu_);
  // Room: a free slot, or a place in the queue behind the running batch.
  if (stopping_ || pending_ >= opts_.max_queue + size_t(opts_.parallel) - stats_.running) return false;
  inbox_.push_back(std::move(s));
  stats_.waiting = ++pending_;
  wake_.notify_one();
  return true;
}

void EngineCore::shutdown(bool drain) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    drain_ = drain;
    wake_.notify_one();
  }
  thread_.join();
}

EngineStats EngineCore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void EngineCore::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || sched_->waiting() + sched_->running() > 0; });
      while (!inbox_.empty()) {
        sched_->add(std::move(inbox_.front()));
        inbox_.pop_front();
      }
      if (stopping_) {
        for (Sequence* s : sched_->all())
          if (s->status == SequenceStatus::kWaiting || !drain_) s->req->cancelled = true;
        if (sched_->waiting() + sched_->running() == 0) return;
      }
    }
    try {
      step();
    } catch (const std::exception& e) {  // a backend failure: fail what was running, keep serving
      fail_running(e.what());
    }
    finished_.clear();
  }
}

void EngineCore::step() {
  rec_ = StepRecord{};
  if (recording_) rec_.t = trace_.on() ? trace_.clock() : now();
  sweep_cancelled();
  const StepPlan plan = sched_->schedule();
  start(plan);
  run_prefill(plan.prefill);
  run_decode(plan.decode);
  publish_stats();
  if (recording_ && (rec_.prefill_parts > 0 || rec_.decode_rows > 0 || rec_.collect_ms > 0)) {
    rec_.waiting = int64_t(sched_->waiting());
    rec_.running = int64_t(sched_->running());
    rec_.step_ms = ((trace_.on() ? trace_.clock() : now()) - rec_.t) * 1e3;
    trace_.write(rec_);
    if (opts_.on_step) opts_.on_step(rec_);
  }
}

void EngineCore::sweep_cancelled() {
  for (Sequence* s : sched_->all())
    if (s->req->cancelled) finish(*s, "cancelled");
}

// Bookkeeping for the plan's admissions and preemptions, and the block-table rows that
// changed (a new sequence's, or one that took a block).
void EngineCore::start(const StepPlan& plan) {
  for (Sequence* s : plan.admitted) {
    s->serial = ++serials_;
    s->uploaded_blocks = 0;
    if (s->preemptions == 0) {
      s->t_start = now();
      s->cached = s->computed;
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.waiting = --pending_;
    ++stats_.running;
    if (opts_.prefix_cache && s->preemptions == 0) {
      ++stats_.prefix_cache_queries;
      stats_.prefix_cache_hits += s->computed > 0;
      stats_.prefix_cache_hit_tokens += uint64_t(s->computed);
    }
  }
  if (!plan.preempted.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.preemptions += plan.preempted.size();
    stats_.running -= plan.preempted.size();
    stats_.waiting = pending_ += plan.preempted.size();
  }
  rec_.admitted = int64_t(plan.admitted.size());
  rec_.preempted = int64_t(plan.preempted.size());
  auto upload = [&](Sequence& s) {
    if (s.blocks.size() == s.uploaded_blocks) return;
    runner_->set_blocks(s.slot, s.blocks);
    s.uploaded_blocks = s.blocks.size();
  };
  for (const StepPlan::Chunk& c : plan.prefill) upload(*c.seq);
  for (Sequence* s : plan.decode) upload(*s);
}

const float* EngineCore::host_logits(const Sequence& s, int64_t row) {
  if (s.req->opts.logprobs < 0) return nullptr;
  model_.transformer().backend().to_host(runner_->logits() + row * vocab_, host_row_.data(), vocab_);
  return host_row_.data();
}

void EngineCore::run_prefill(const std::vector<StepPlan::Chunk>& chunks) {
  if (chunks.empty()) return;
  std::vector<ModelRunner::PrefillPart> parts;
  std::vector<LogitEdit> edits;
  std::vector<uint64_t> mask_bits;
  std::vector<int32_t> mask_rows;
  int32_t sampled = 0;
  for (const StepPlan::Chunk& c : chunks) {
    Sequence& s = *c.seq;
    const bool last = s.computed + c.n == int64_t(s.tokens.size());
    parts.push_back({s.tokens.data() + s.computed, c.n, int32_t(s.computed), s.slot, last, s.sampling()});
    if (!last) continue;
    add_mask(s, sampled, mask_bits, mask_rows);
    s.processor.edits(sampled++, edits);
  }
  const TokenMasks masks{mask_bits.data(), mask_rows.data(), int64_t(mask_rows.size())};
  std::vector<int32_t> ids;
  timed(recording_, rec_.prefill_ms, [&] { ids = runner_->prefill(parts, edits, &masks); });
  rec_.prefill_parts = int64_t(parts.size());
  int64_t row = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    Sequence& s = *chunks[i].seq;
    s.computed += chunks[i].n;
    rec_.prefill_tokens += chunks[i].n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.prompt_tokens += uint64_t(chunks[i].n);
    }
    if (!parts[i].sample) continue;
    ++rec_.first_tokens;
    // Its full blocks are shareable now, while it runs (a burst with one system prompt).
    if (opts_.prefix_cache) blocks_->publish(s.blocks, s.tokens, s.computed / opts_.kv_block_size);
    s.in_decode = true;
    const float* logits = host_logits(s, row);
    const int32_t id = ids.at(size_t(row++));
    if (s.req->opts.max_tokens == 0) finish(s, "length");
    else accept(s, id, logits);
  }
}

// One decode token for every planned sequence still running. A sequence whose pending
// token is its last (the budget, the context) sits this step out: that token ends it.
void EngineCore::run_decode(const std::vector<Sequence*>& planned) {
  const std::vector<uint64_t> done = std::move(flight_);
  flight_.clear();
  std::vector<int32_t> done_ids(done.size());
  if (!done.empty()) timed(recording_, rec_.collect_ms, [&] { runner_->collect(done_ids.data()); });
  std::vector<Sequence*> batch;
  bool sync = false;
  for (Sequence* s : planned) {
    if (s->status != SequenceStatus::kRunning) continue;
    if (s->last_token_pending(opts_.context)) continue;
    batch.push_back(s);
    sync |= s->needs_sync();
  }
  if (!sync && !batch.empty() && int(batch.size()) <= max_batch_) {
    launch_decode(batch);
    rec_.decode_rows = int64_t(batch.size());
    timed(recording_, rec_.hand_out_ms, [&] { hand_out(done, done_ids); });
    return;
  }
  timed(recording_, rec_.hand_out_ms, [&] { hand_out(done, done_ids); });
  decode_synchronously(std::move(batch));
}

// Steps whose tokens reach the host before the next is launched (a sequence's edits need
// its last token; its logprobs need its row), in parts of at most max_batch rows.
void EngineCore::decode_synchronously(std::vector<Sequence*> batch) {
  std::erase_if(batch, [](Sequence* s) { return s->status != SequenceStatus::kRunning; });
  for (Sequence* s : batch) s->pending_row = -1;  // their pending tokens were just handed out
  for (size_t b0 = 0; b0 < batch.size(); b0 += size_t(max_batch_)) {
    const size_t b = std::min(size_t(max_batch_), batch.size() - b0);
    const std::vector<Sequence*> part(batch.begin() + ptrdiff_t(b0), batch.begin() + ptrdiff_t(b0 + b));
    launch_decode(part);
    rec_.decode_rows += int64_t(b);
    std::vector<int32_t> ids(b);
    timed(recording_, rec_.collect_ms, [&] { runner_->collect(ids.data()); });
    flight_.clear();
    for (size_t i = 0; i < b; ++i) {
      Sequence& s = *part[i];
      s.pending_row = -1;
      accept(s, ids[i], host_logits(s, int64_t(i)));
    }
  }
}

// Launches one decode step over `batch`: a sequence whose last token is still on the device
// (pending_row >= 0) takes it from there and decodes at the position after it.
void EngineCore::launch_decode(const std::vector<Sequence*>& batch) {
  const size_t n = batch.size();
  std::vector<int32_t> tokens(n), from(n), pos(n), seqs(n);
  std::vector<RowSampling> params(n);
  std::vector<LogitEdit> edits;
  std::vector<uint64_t> mask_bits;
  std::vector<int32_t> mask_rows;
  bool constrained = false;
  for (size_t i = 0; i < n; ++i) {
    const Sequence& s = *batch[i];
    const bool pending = s.pending_row >= 0;
    tokens[i] = pending ? 0 : s.tokens.back();
    from[i] = s.pending_row;
    pos[i] = int32_t(s.decode_position());
    seqs[i] = s.slot;
    params[i] = s.sampling(pending ? 1 : 0);
    s.processor.edits(int32_t(i), edits);
    constrained |= s.constraint != nullptr;  // (constrained rows sync: no pending token)
  }
  // The masks are computed while the device runs the step's forward pass.
  MaskSource masks;
  if (constrained)
    masks = [&] {
      timed(recording_, rec_.mask_ms, [&] {
        for (size_t i = 0; i < n; ++i) add_mask(*batch[i], int32_t(i), mask_bits, mask_rows);
      });
      return TokenMasks{mask_bits.data(), mask_rows.data(), int64_t(mask_rows.size())};
    };
  Backend& be = model_.transformer().backend();
  const bool profiled = decode_steps_++ == opts_.profile_step;
  if (profiled) be.profile(true);
  runner_->launch(tokens.data(), from.data(), pos.data(), seqs.data(), params.data(), int(n), edits, masks);
  if (profiled) be.profile(false);
  for (Sequence* s : sched_->all()) s->pending_row = -1;
  flight_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    batch[i]->pending_row = int(i);
    batch[i]->computed += 1;  // the fed token's keys and values
    flight_[i] = batch[i]->serial;
  }
}

// Hands each collected id to its sequence, unless the sequence ended or was preempted.
void EngineCore::hand_out(const std::vector<uint64_t>& serials, const std::vector<int32_t>& ids) {
  if (serials.empty()) return;
  std::map<uint64_t, Sequence*> by_serial;
  for (Sequence* s : sched_->all())
    if (s->status == SequenceStatus::kRunning) by_serial[s->serial] = s;
  for (size_t i = 0; i < serials.size(); ++i) {
    auto it = by_serial.find(serials[i]);
    if (it == by_serial.end() || it->second->status != SequenceStatus::kRunning) continue;
    accept(*it->second, ids[i], nullptr);
  }
}

void EngineCore::accept(Sequence& s, int32_t id, const float* logits) {
  const Request& r = *s.req;
  if (s.generated() == 0) s.t_first = now();
  if (!r.opts.ignore_eos && model_.has_tokenizer() && model_.tokenizer().is_eos(id)) return finish(s, "stop");
  if (s.constraint && !s.constraint->accept(id))
    return finish(s, "error", "the sampled token " + std::to_string(id) + " does not continue the required format");
  s.tokens.push_back(id);
  s.processor.push(id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.generated_tokens;
  }
  TokenEvent ev;
  ev.id = id;
  StopResult stop;
  if (s.detok) stop = s.stops.feed(s.detok->push(id));
  ev.text = stop.text;
  if (r.opts.logprobs >= 0 && logits) {
    const std::span<const float> row(logits, size_t(vocab_));
    ev.logprob = token_logprob(row, id);
    ev.top = top_logprobs(row, r.opts.logprobs);
  }
  if (r.on_token) r.on_token(ev);
  if (stop.stopped) return finish(s, "stop", {}, /*by_stop_string=*/true);
  if (s.constraint && s.constraint->complete()) return finish(s, "stop");  // nothing may follow
  if (s.generated() >= r.opts.max_tokens) return finish(s, "length");
  // The new token's position is past the context: no room to feed it.
  if (int64_t(s.tokens.size()) - 1 >= opts_.context) return finish(s, "length");
}

void EngineCore::finish(Sequence& s, const std::string& reason, const std::string& error, bool by_stop_string) {
  RequestResult res;
  res.finish_reason = reason;
  res.error = error;
  if (!by_stop_string && reason != "error" && s.detok) {  // release held-back text
    StopResult tail = s.stops.feed(s.detok->flush());
    res.tail_text = tail.text;
    if (tail.stopped) res.finish_reason = "stop";
    else res.tail_text += s.stops.flush();
  }
  if (reason == "cancelled") res.tail_text.clear();
  res.prompt_tokens = s.num_prompt;
  res.cached_tokens = s.cached;
  res.completion_tokens = s.generated();
  res.preemptions = s.preemptions;
  const double t = now();
  res.queue_seconds = (s.t_start > 0 ? s.t_start : t) - s.t_submit;
  res.ttft_seconds = s.t_first > 0 ? s.t_first - s.t_submit : 0;
  res.total_seconds = t - s.t_submit;
  const bool was_running = s.status == SequenceStatus::kRunning;
  s.pending_row = -1;
  finished_.push_back(sched_->remove(s));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.finished[res.finish_reason];
    if (was_running) --stats_.running;
    else stats_.waiting = --pending_;
    // Counted before on_done, so a client that sees its end also sees the blocks back.
    stats_.kv_blocks_used = blocks_->used();
    stats_.kv_blocks_cached = blocks_->cached();
  }
  if (s.req->on_done) s.req->on_done(res);
}

void EngineCore::fail_running(const std::string& error) {
  flight_.clear();
  runner_->abandon();
  for (Sequence* s : sched_->all())
    if (s->status == SequenceStatus::kRunning) finish(*s, "error", error);
}

void EngineCore::publish_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.kv_positions_used = 0;
  for (Sequence* s : sched_->all())
    if (s->status == SequenceStatus::kRunning) stats_.kv_positions_used += s->computed;
  stats_.kv_blocks_used = blocks_->used();
  stats_.kv_blocks_cached = blocks_->cached();
}

}  // namespace brisk
