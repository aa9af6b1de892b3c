// A generation request as the scheduler takes it (already tokenized), and what it reports
// back: one event per generated token (the text it completes, UTF-8-safe and with stop
// strings held back) and exactly one final result. The callbacks run on the engine thread,
// so they must be quick (hand the event to the waiting connection and return).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/generator.hpp"

namespace brisk {

struct TokenEvent {
  int32_t id = 0;
  std::string text;   // may be empty (an incomplete character, or text held for a stop string)
  float logprob = 0;  // log-softmax of the chosen token (when logprobs were asked for)
  std::vector<std::pair<int32_t, float>> top;  // the most likely alternatives, when asked for
};

struct RequestResult {
  std::string finish_reason;  // "stop", "length", "cancelled" or "error"
  std::string error;          // with "error": what went wrong
  std::string tail_text;      // text released at the end (held back for a possible stop string)
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, found in the prefix cache (not prefilled)
  int64_t completion_tokens = 0;
  double queue_seconds = 0;   // submitted -> started prefilling
  double ttft_seconds = 0;    // submitted -> first token
  double total_seconds = 0;
};

struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions opts;
  int logprobs = -1;  // -1: off; else how many alternatives per token (0..20)
  std::function<void(const TokenEvent&)> on_token;
  std::function<void(const RequestResult&)> on_done;
  // Set from any thread; the scheduler frees the request's cache at its next step.
  std::atomic<bool> cancelled{false};
};

}  // namespace brisk
