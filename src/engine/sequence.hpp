// One request as the engine runs it (nano-vllm's Sequence): its tokens (the prompt, then
// what it generated), where it stands (waiting, running, finished), the KV blocks that
// hold its computed positions, and its sampling and stop state. A preempted sequence goes
// back to waiting with its tokens kept and its blocks given back; when it runs again it
// recomputes them (largely from the prefix cache) and carries on, so its client sees only
// latency.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/request.hpp"
#include "engine/sampler.hpp"
#include "engine/stop.hpp"
#include "grammar/constraint.hpp"
#include "tokenizer/tokenizer.hpp"

namespace brisk {

enum class SequenceStatus { kWaiting, kRunning, kFinished };

struct Sequence {
  Sequence(std::shared_ptr<Request> request, uint64_t seed, const Tokenizer* tok);

  std::shared_ptr<Request> req;
  std::vector<int32_t> tokens;  // prompt + generated, every one known on the host
  int64_t num_prompt = 0;
  SequenceStatus status = SequenceStatus::kWaiting;
  int slot = -1;                // its block-table row while running
  std::vector<int32_t> blocks;  // KV blocks of positions [0, blocks.size() * block_size)
  int64_t computed = 0;         // tokens whose keys and values are in the cache
  size_t uploaded_blocks = 0;   // entries of its block-table row the runner has
  int64_t cached = 0;           // prompt tokens found in the prefix cache at its first admission
  // Its row in the launched, uncollected decode step: the token that step samples is its
  // next one, known to the device but not yet to the host (-1: none).
  int pending_row = -1;
  uint64_t serial = 0;          // names it in a launched step, which may outlive its run
  uint64_t seed = 0;
  int64_t preemptions = 0;
  LogitsProcessor processor;
  std::unique_ptr<grammar::TokenConstraint> constraint;  // structured output, when asked for
  std::unique_ptr<IncrementalDetokenizer> detok;
  StopMatcher stops;
  double t_submit = 0, t_start = 0, t_first = 0;

  int64_t generated() const { return int64_t(tokens.size()) - num_prompt; }
  // Past its prefill (which ends by sampling a token): every token but the last is in the
  // cache and the next decode step feeds the last, or all are and a launched step holds
  // its next one. Cleared by preemption, which makes the whole sequence a prompt again.
  bool in_decode = false;
  bool prefilling() const { return status == SequenceStatus::kRunning && !in_decode; }
  // The position the next decode step writes: the last token's, or (with a token pending
  // on the device) the one after it; either way the first not yet computed.
  int64_t decode_position() const { return computed; }
  // A launched step holds its last token (the budget or the context ends with it): it has
  // nothing left to feed, so it takes no step and no block, and that token ends it.
  bool last_token_pending(int64_t context) const {
    return pending_row >= 0 && (generated() + 1 >= req->opts.max_tokens || int64_t(tokens.size()) >= context);
  }
  // Whether the host must see each token before the next step (penalties, logprobs, grammar).
  bool needs_sync() const { return processor.needs_history() || req->opts.logprobs >= 0 || constraint != nullptr; }
  // Sampling settings for its next token, or (ahead = 1) for the one after a pending token.
  RowSampling sampling(int ahead = 0) const {
    return row_sampling(req->opts.sampling, seed, uint64_t(generated() + ahead));
  }
};

}  // namespace brisk
