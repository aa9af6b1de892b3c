#include "engine/model_runner.hpp"

#include <algorithm>
#include <cstring>

#include "base/error.hpp"

namespace brisk {

ModelRunner::ModelRunner(Transformer& t, const RunnerConfig& c)
    : t_(t), be_(t.backend()), max_batch_(c.max_batch), use_graphs_(c.use_graphs && t.backend().can_capture()) {
  if (max_batch_ < 1 || max_batch_ > 1024) throw Error(ErrorCode::kInvalidArgument, "batch size must be in [1, 1024]");
  int top = 1;
  while (top < max_batch_) top *= 2;
  capacity_ = std::max<int64_t>(top, 1);
  kv_ = t_.new_kv_cache(c.context, c.slots, c.kv_blocks, c.block_size);
  try {
    init_buffers(c.min_scratch);
  } catch (...) {  // (the destructor does not run when the constructor throws)
    be_.release_bytes(dev_);
    t_.free_kv_cache(kv_);
    throw;
  }
}

void ModelRunner::init_buffers(int64_t min_scratch) {
  t_.reserve(std::max<int64_t>(capacity_, min_scratch));
  const uint64_t int_bytes = uint64_t(capacity_) * 6 * 4;  // tokens, positions, seqs, from, ids, prefill ids
  dev_ = be_.alloc_bytes(int_bytes + uint64_t(capacity_) * sizeof(RowSampling));
  auto* ints = static_cast<int32_t*>(dev_);
  in_ = StepInputs{ints, ints + capacity_, ints + 2 * capacity_};
  from_ = ints + 3 * capacity_;
  ids_ = ints + 4 * capacity_;
  prefill_ids_ = ints + 5 * capacity_;
  params_ = reinterpret_cast<RowSampling*>(static_cast<uint8_t*>(dev_) + int_bytes);
  host_.ints.assign(size_t(capacity_) * 4, 0);
  host_.params.assign(size_t(capacity_), RowSampling{});
}

ModelRunner::~ModelRunner() {
  be_.release_bytes(edits_);
  be_.release_bytes(prefill_buf_);
  be_.release_bytes(dev_);
  t_.free_kv_cache(kv_);
}

void ModelRunner::set_blocks(int seq, const std::vector<int32_t>& blocks) {
  be_.set_kv_blocks(kv_, seq, blocks.data(), int(blocks.size()));
}

void ModelRunner::edit_and_sample(const float* logits, int rows, std::span<const LogitEdit> edits,
                                  const TokenMasks* masks, int32_t* ids) {
  const int64_t vocab = t_.hparams().vocab;
  if (masks && masks->n > 0) be_.mask_logits(const_cast<float*>(logits), vocab, vocab, masks->bits, masks->rows, masks->n);
  if (!edits.empty()) {
    if (int64_t(edits.size()) > edits_cap_) {
      const int64_t cap = std::max<int64_t>(int64_t(edits.size()), 2 * edits_cap_ + 1024);
      be_.release_bytes(edits_);
      edits_ = nullptr, edits_cap_ = 0;  // (alloc may throw)
      edits_ = static_cast<LogitEdit*>(be_.alloc_bytes(uint64_t(cap) * sizeof(LogitEdit)));
      edits_cap_ = cap;
    }
    be_.copy_from_host(edits.data(), edits_, edits.size() * sizeof(LogitEdit));
    // (the logits are the step's own scratch, written by this step alone)
    be_.edit_logits(const_cast<float*>(logits), vocab, edits_, int64_t(edits.size()));
  }
  be_.sample(logits, rows, vocab, vocab, params_, ids);
}

int ModelRunner::bucket_for(int b) const {
  int k = 1;
  while (k < b) k *= 2;
  return k;
}

void ModelRunner::run_forward(int bucket) { logits_ = t_.forward_step(in_, bucket, kv_, /*all_logits=*/true); }

void ModelRunner::decode(const int32_t* tokens, const int32_t* positions, const int32_t* seqs,
                         const RowSampling* params, int b, int32_t* ids, std::span<const LogitEdit> edits,
                         const TokenMasks* masks) {
  launch(tokens, nullptr, positions, seqs, params, b, edits, masks ? MaskSource([masks] { return *masks; }) : MaskSource{});
  collect(ids);
}

void ModelRunner::launch(const int32_t* tokens, const int32_t* from_prev, const int32_t* positions,
                         const int32_t* seqs, const RowSampling* params, int b, std::span<const LogitEdit> edits,
                         const MaskSource& masks) {
  if (b < 1 || b > max_batch_) throw Error(ErrorCode::kInternal, "decode batch outside the runner's buckets");
  if (launched_ > 0) throw Error(ErrorCode::kInternal, "a decode step launched before the last was collected");
  const int bucket = bucket_for(b);
  int32_t* h = host_.ints.data();
  bool any_prev = false;
  for (int i = 0; i < bucket; ++i) {
    const int src = std::min(i, b - 1);
    const int32_t from = from_prev ? from_prev[src] : -1;
    if (from >= max_batch_) throw Error(ErrorCode::kInternal, "a token taken from outside the last step");
    any_prev |= from >= 0;
    h[i] = from >= 0 ? 0 : tokens[src];  // a placeholder the device replaces
    h[capacity_ + i] = positions[src];
    h[2 * capacity_ + i] = seqs ? seqs[src] : 0;
    h[3 * capacity_ + i] = from;
    host_.params[size_t(i)] = params[src];
  }
  t_.check_inputs(h, h + capacity_, seqs ? h + 2 * capacity_ : nullptr, b, kv_);
  be_.copy_from_host(h, dev_, uint64_t(capacity_) * 4 * 4);
  be_.copy_from_host(host_.params.data(), params_, uint64_t(capacity_) * sizeof(RowSampling));
  if (any_prev) be_.take_tokens(in_.tokens, from_, ids_, bucket);
  Bucket& bk = buckets_[bucket];
  if (!use_graphs_ || bk.uses == 0) {
    run_forward(bucket);  // the first run also sizes every scratch buffer the step uses
    bk.logits = logits_;
  } else {
    if (bk.graph < 0) {
      be_.begin_capture();
      try {
        run_forward(bucket);
      } catch (...) {
        be_.end_capture();
        throw;
      }
      bk.graph = be_.end_capture();
      bk.logits = logits_;
    }
    be_.replay(bk.graph);
    logits_ = bk.logits;
  }
  ++bk.uses;
  const TokenMasks m = masks ? masks() : TokenMasks{};  // (the device is running the pass meanwhile)
  edit_and_sample(logits_, bucket, edits, &m, ids_);
  launched_ = b;
}

void ModelRunner::warm_up(int64_t prefill_tokens) {
  prefill_tokens = std::min<int64_t>(prefill_tokens, kv_.capacity);  // (slot 0's default blocks)
  const std::vector<int32_t> zeros(size_t(std::max<int64_t>(capacity_, prefill_tokens)), 0);
  const std::vector<RowSampling> greedy(static_cast<size_t>(capacity_));
  std::vector<int32_t> ids(static_cast<size_t>(capacity_));
  if (prefill_tokens > 0) prefill(zeros.data(), prefill_tokens, 0, 0, greedy[0]);
  for (int b = 1;; b *= 2) {
    const int rows = std::min(b, max_batch_);
    for (int use = 0; use < 2; ++use) decode(zeros.data(), zeros.data(), zeros.data(), greedy.data(), rows, ids.data());
    if (rows == max_batch_) break;
  }
}

void ModelRunner::collect(int32_t* ids) {
  if (launched_ == 0) throw Error(ErrorCode::kInternal, "no decode step to collect");
  const int b = launched_;
  launched_ = 0;
  be_.copy_to_host(ids_, ids, uint64_t(b) * 4);
}

int32_t ModelRunner::prefill(const int32_t* tokens, int64_t n, int32_t pos0, int32_t seq, const RowSampling& params) {
  return prefill({PrefillPart{tokens, n, pos0, seq, true, params}}).at(0);
}

std::vector<int32_t> ModelRunner::prefill(const std::vector<PrefillPart>& parts, std::span<const LogitEdit> edits,
                                          const TokenMasks* masks) {
  // Host staging: tokens | positions | seqs of every part, then the rows to sample.
  int64_t n = 0;
  for (const PrefillPart& p : parts) n += p.n;
  if (parts.empty() || n < 1) throw Error(ErrorCode::kInternal, "an empty prefill");
  std::vector<int32_t> ints(static_cast<size_t>(n) * 3), rows;
  int64_t at = 0;
  int sampled = 0;
  for (const PrefillPart& p : parts) {
    std::copy(p.tokens, p.tokens + p.n, ints.begin() + at);
    for (int64_t i = 0; i < p.n; ++i) ints[size_t(n + at + i)] = p.pos0 + int32_t(i), ints[size_t(2 * n + at + i)] = p.seq;
    at += p.n;
    if (p.sample) {
      if (sampled == capacity_) throw Error(ErrorCode::kInternal, "more sampled prefill rows than the runner holds");
      host_.params[size_t(sampled++)] = p.params;
      rows.push_back(int32_t(at - 1));
    }
  }
  t_.check_inputs(ints.data(), ints.data() + n, ints.data() + 2 * n, n, kv_);
  t_.reserve(n);
  // One part keeps the plain path (the last row's logits), as a prompt run alone does.
  const bool gather = parts.size() > 1 && !rows.empty();
  if (gather) ints.insert(ints.end(), rows.begin(), rows.end());
  // Prefill inputs go through a grow-only buffer of this runner's (no captured step reads
  // it, so it may move); the sampling settings and the ids through the step buffers.
  const uint64_t need = uint64_t(ints.size()) * 4;
  if (need > prefill_bytes_) {
    be_.release_bytes(prefill_buf_);
    prefill_buf_ = nullptr;  // (alloc may throw)
    prefill_bytes_ = 0;
    prefill_buf_ = be_.alloc_bytes(need);
    prefill_bytes_ = need;
  }
  auto* buf = static_cast<int32_t*>(prefill_buf_);
  be_.copy_from_host(ints.data(), buf, need);
  be_.copy_from_host(host_.params.data(), params_, uint64_t(std::max(sampled, 1)) * sizeof(RowSampling));
  StepInputs in{buf, buf + n, buf + 2 * n, parts.size() == 1};
  std::vector<int64_t> starts;  // of each part's rows, when there are several
  if (parts.size() > 1) {
    starts.push_back(0);
    for (const PrefillPart& p : parts) starts.push_back(starts.back() + p.n);
    in.part_starts = starts.data(), in.n_parts = int(parts.size());
  }
  if (gather) in.logit_rows = buf + 3 * n, in.n_logit_rows = int64_t(rows.size());
  in.logits = sampled > 0;  // a pass that completes no prompt needs no output head
  logits_ = t_.forward_step(in, n, kv_, /*all_logits=*/false);
  std::vector<int32_t> ids(static_cast<size_t>(sampled));
  if (sampled > 0) {
    edit_and_sample(logits_, sampled, edits, masks, prefill_ids_);
    be_.copy_to_host(prefill_ids_, ids.data(), uint64_t(sampled) * 4);
  }
  return ids;
}

}  // namespace brisk
