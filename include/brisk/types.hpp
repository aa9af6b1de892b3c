// The values that cross brisk's public API: how to sample, what a request asks for, what
// it reports back token by token and at its end, how an engine is set up, and what it
// reports about itself. Plain structs, no behaviour; brisk/brisk.hpp has the classes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace brisk {

// One sampling definition for every backend: the penalties and logit_bias edit the row of
// logits first, then top-k, top-p and min-p filter it (at temperature 1) and a
// counter-based draw picks the token: the same seed gives the same tokens everywhere.
struct SamplingParams {
  float temperature = 0.8f;       // 0 => greedy (argmax, lowest id on ties)
  int top_k = 40;                 // <= 0 => off
  float top_p = 0.95f;            // in (0, 1]; 1 => off
  float min_p = 0.05f;            // in [0, 1]; <= 0 => off
  float repeat_penalty = 1.0f;    // > 0; 1 => off (llama.cpp: logit > 0 divided, <= 0 multiplied)
  int repeat_last_n = 64;         // penalty window over prompt + generated; 0 => no penalties, -1 => all
  float presence_penalty = 0.0f;  // OpenAI: logit -= presence * (count > 0)
  float frequency_penalty = 0.0f; // OpenAI: logit -= frequency * count
  // OpenAI logit_bias: added to the token's logit after the penalties; -100 bans it.
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;   // unset => seeded from std::random_device
};

// Structured output: the generated text must be a sentence of this (OpenAI's response_format,
// llama.cpp's grammar, vLLM's guided_regex / guided_choice). Every token is masked to what can
// continue it; the end of sequence only where the text is complete.
struct OutputConstraint {
  enum class Kind { None, JsonSchema, JsonObject, Gbnf, Regex, Choice };
  Kind kind = Kind::None;
  std::string text;                  // the schema (JSON text), the GBNF grammar or the regex
  std::vector<std::string> choices;  // Choice: one of these strings, exactly
  bool strict = true;                // JsonSchema: additionalProperties false unless given
  // JsonSchema: each JSON text is written between `before` and `after`, 1..max_count of them
  // (< 0: any number) separated by `between`: tool calls in a chat template's own syntax.
  std::string before, after, between;
  int max_count = 1;

  static OutputConstraint of(Kind kind, std::string text, bool strict = true) {
    OutputConstraint c;
    c.kind = kind;
    c.text = std::move(text);
    c.strict = strict;
    return c;
  }
};

struct GenerateOptions {
  int max_tokens = 128;
  OutputConstraint constraint;
  SamplingParams sampling;
  std::vector<std::string> stop;  // stop strings: the text ends before the first one
  bool ignore_eos = false;        // generate on past end-of-sequence tokens (under a constraint: never offer one)
  int logprobs = -1;              // -1: off; else how many alternatives per token (0..20)
};

// One generated token, as it is streamed.
struct TokenEvent {
  int32_t id = 0;
  std::string text;   // may be empty (an incomplete character, or text held for a stop string)
  float logprob = 0;  // log-softmax of the chosen token after the penalties (with logprobs)
  std::vector<std::pair<int32_t, float>> top;  // the most likely alternatives, with logprobs
};

struct RequestResult {
  std::string finish_reason;  // "stop", "length", "cancelled" or "error"
  std::string error;          // with "error": what went wrong
  std::string tail_text;      // text released at the end (held back for a possible stop string)
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, found in the prefix cache (not prefilled)
  int64_t completion_tokens = 0;
  int64_t preemptions = 0;    // times its KV blocks were taken back and its tokens recomputed
  double queue_seconds = 0;   // submitted -> started prefilling
  double ttft_seconds = 0;    // submitted -> first token
  double total_seconds = 0;
};

// A record of one engine step (EngineOptions::on_step, and --trace-steps' JSON lines).
struct StepRecord {
  double t = 0;                // seconds since the engine started, at the step's start
  int64_t waiting = 0;         // requests waiting after admission
  int64_t running = 0;         // sequences holding a slot after admission
  int64_t admitted = 0;        // given a slot this step
  int64_t preempted = 0;       // sent back to the queue this step
  int64_t prefill_parts = 0;   // prompts in this step's prefill pass
  int64_t prefill_tokens = 0;
  int64_t first_tokens = 0;    // prompts that completed (their first token sampled)
  double prefill_ms = 0;       // the pass, launch to ids on the host
  int64_t decode_rows = 0;     // rows of the decode step launched this step
  double collect_ms = 0;       // waiting for the previous decode step's ids
  double hand_out_ms = 0;      // detokenizing, stop strings and streaming the collected ids
  double mask_ms = 0;          // grammar masks on the host (overlapping the decode step's forward pass)
  double step_ms = 0;
};

// The largest KV block size (positions per block, a power of two) the backends take.
inline constexpr int kMaxKvBlockSize = 1024;

struct EngineOptions {
  int parallel = 4;             // sequences decoded together (block-table slots)
  int64_t context = 0;          // positions per sequence (prompt + generated); 0: min(trained, 4096)
  int64_t prefill_chunk = 0;    // prompt tokens per step; 0: the backend's default
  int prefill_seqs = 0;         // prompts one prefill pass may pack; 0: the backend's default
  size_t max_queue = 64;        // requests waiting beyond the running ones
  // The KV pool: kv_blocks blocks, or else as many as kv_memory bytes hold, or else
  // parallel x context's worth. Blocks are taken as sequences grow; when the pool runs dry
  // the newest sequence is preempted and recomputed later.
  int64_t kv_blocks = 0;
  uint64_t kv_memory = 0;
  int kv_block_size = 16;       // positions per KV block, a power of two
  bool prefix_cache = true;     // share the full blocks of common prefixes
  int warm_up = -1;             // run every step shape once before serving; -1: the backend's default
  std::string trace_path;       // a JSON line per step (StepRecord) goes here; empty: none
  std::function<void(const StepRecord&)> on_step;  // called on the engine thread after each step
  int64_t profile_step = -1;    // this decode step (counted from 0) runs under the backend's profiler
};

struct EngineStats {
  size_t waiting = 0;              // accepted, not running (new or preempted)
  size_t running = 0;              // holding a slot
  int slots_total = 0;
  int64_t context = 0;             // positions per sequence
  int64_t kv_positions_used = 0;   // computed positions of running sequences
  int64_t kv_positions_total = 0;  // the pool's positions
  int64_t kv_blocks_used = 0;      // held by running sequences (a shared block counts once)
  int64_t kv_blocks_cached = 0;    // held by no sequence, keeping a prefix for reuse
  int64_t kv_blocks_total = 0;
  uint64_t preemptions = 0;        // all time
  uint64_t prefix_cache_queries = 0;      // prompts looked up
  uint64_t prefix_cache_hits = 0;         // prompts that found at least one cached block
  uint64_t prefix_cache_hit_tokens = 0;   // prompt tokens not prefilled thanks to the cache
  uint64_t prompt_tokens = 0;      // prefilled, all time (recomputed ones included)
  uint64_t generated_tokens = 0;   // all time
  std::map<std::string, uint64_t> finished;  // by finish reason
};

}  // namespace brisk
