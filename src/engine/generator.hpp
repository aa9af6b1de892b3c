// Generation for one sequence: prefill the prompt, then sample token by token until EOS,
// a stop string or the token budget, streaming UTF-8-safe text. It owns the sequence's KV
// cache. (Batched, paged serving belongs to the scheduler, a later layer.)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_runner.hpp"
#include "engine/sampler.hpp"
#include "model/model.hpp"

namespace brisk {

struct GenerateOptions {
  int max_tokens = 128;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

struct GenerateResult {
  std::vector<int32_t> tokens;   // generated ids (the stopping EOS excluded)
  std::string text;              // generated text, stop string excluded
  std::string finish_reason;     // "stop" (EOS or stop string) or "length"
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;
  double generate_seconds = 0;   // from the first sampled token to the last
};

class Session {
 public:
  // ctx: KV capacity in positions (prompt + generated); <= the model's trained context.
  Session(Model& model, int64_t ctx);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int64_t context() const { return ctx_; }

  // Starts from an empty cache each call. on_text receives text as it becomes final; returning
  // false from it cancels generation (finish_reason "cancelled").
  GenerateResult generate(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                          const std::function<bool(const std::string&)>& on_text = {});

  // Logits of every prompt position (for tests and reference comparison); starts from empty.
  std::vector<float> prompt_logits(const std::vector<int32_t>& prompt);

 private:
  void prefill(const std::vector<int32_t>& prompt, float* last_logits, std::vector<float>* all);
  void check_prompt(const std::vector<int32_t>& prompt) const;

  static constexpr int64_t kPrefillChunk = 512;  // prompt tokens per forward pass; bounds scratch memory

  Model& model_;
  int64_t ctx_;
  KvCache kv_;
  std::unique_ptr<ModelRunner> runner_;  // decode steps on backends that capture them
};

}  // namespace brisk
