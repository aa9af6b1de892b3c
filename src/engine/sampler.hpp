// One sampling definition for every backend and every verb. A request's SamplingParams
// become, per step, (1) a logits-processor pre-pass over its row of logits (the penalties
// over its history and OpenAI's logit_bias, as LogitEdits the backend applies on the
// device where there is one; grammar masks will join them) and (2) the backend's
// counter-based row sampler (backend/row_sampling.hpp): temperature, top-k, top-p, min-p,
// and a draw that is a pure function of (seed, token index). So the same request with the
// same seed gives the same tokens from `brisk run`, `brisk serve` and the bindings, on the
// CPU and in the GPU's exact mode.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "brisk/types.hpp"

namespace brisk {


// Throws brisk::Error(kInvalidArgument) naming the offending field (vocab: for logit_bias ids).
void validate(const SamplingParams& params, int64_t vocab);

// The backend's settings for token `step` (0-based, counted from the first generated token).
RowSampling row_sampling(const SamplingParams& p, uint64_t seed, uint64_t step);

// A sequence's logits processors: the penalties, over a window of its history kept as
// incremental counts, and its logit_bias. edits() gives at most one LogitEdit per token
// id, so a backend may apply them in any order.
class LogitsProcessor {
 public:
  LogitsProcessor(const SamplingParams& params, std::span<const int32_t> history);

  bool active() const { return penalties_ || !bias_.empty(); }
  // Whether the edits depend on the last token (then the host must know it before the next step).
  bool needs_history() const { return penalties_; }
  void push(int32_t id);  // a token appended to the history
  // Appends this sequence's edits for batch row `row`.
  void edits(int32_t row, std::vector<LogitEdit>& out) const;

 private:
  void count(int32_t id, int delta);

  SamplingParams p_;
  bool penalties_ = false;
  std::vector<int32_t> window_;                 // the last repeat_last_n tokens (all, for -1), oldest first
  size_t head_ = 0;                             // window_ is a ring once full
  std::unordered_map<int32_t, int32_t> counts_; // token -> occurrences in the window
  std::vector<std::pair<int32_t, float>> bias_; // merged: one entry per id
};

// The k most likely tokens with their log-softmax values, most likely first (lower id
// first on ties); k is clamped to [0, vocab]. For OpenAI logprobs.
std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, int k);
// log-softmax of one entry of a row.
float token_logprob(std::span<const float> logits, int32_t id);

}  // namespace brisk
