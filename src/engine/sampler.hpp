// The CPU token sampler: turns one row of logits into the next token id.
// It is the reference the GPU sampling kernel is tested against, and the path
// the CPU backend uses, so it must be exact, deterministic for a given seed on
// every platform (own PRNG, no std distributions) and cheap at a 262144 vocab.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace brisk {

struct SamplingParams {
  float temperature = 0.8f;       // 0 => greedy (argmax, lowest id on ties)
  int top_k = 40;                 // <= 0 => off
  float top_p = 0.95f;            // in (0, 1]; 1 => off
  float min_p = 0.05f;            // in [0, 1]; <= 0 => off
  float repeat_penalty = 1.0f;    // > 0; 1 => off (llama.cpp: logit > 0 divided, <= 0 multiplied)
  int repeat_last_n = 64;         // penalty window over history; 0 => no penalties, -1 => all of it
  float presence_penalty = 0.0f;  // OpenAI: logit -= presence * (count > 0)
  float frequency_penalty = 0.0f; // OpenAI: logit -= frequency * count
  std::optional<uint64_t> seed;   // unset => seeded from std::random_device
};

// Throws brisk::Error(kInvalidArgument) naming the offending field.
void validate(const SamplingParams& params);

// Order of operations (llama.cpp's default chain), for temperature > 0:
//   1. penalties (repeat, presence, frequency) over the last repeat_last_n history tokens
//   2. top_k: keep the k largest logits
//   3. top_p: keep the smallest prefix (by descending probability at temperature 1)
//      whose mass reaches top_p
//   4. min_p: keep tokens with p >= min_p * p_max
//   5. temperature: divide the survivors' logits by it
//   6. softmax over the survivors, then one draw from xoshiro256**
// The filters see temperature-1 probabilities, as in llama.cpp. For temperature 0
// only step 1 runs, then argmax. Ties in every ordering break by lower token id.
class Sampler {
 public:
  Sampler(const SamplingParams& params, int32_t vocab_size);

  // logits.size() must equal vocab_size; history is prompt + generated so far.
  // -inf logits are masked tokens; NaN logits or an all-masked row throw.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  void reset(uint64_t seed);

  const SamplingParams& params() const { return params_; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };

  void apply_penalties(std::span<const int32_t> history);
  int32_t argmax() const;
  void gather_candidates();
  void filter_top_k();
  void filter_top_p();
  void filter_min_p();
  int32_t draw();
  double next_uniform();

  SamplingParams params_;
  int32_t vocab_size_;
  uint64_t rng_[4];
  bool sorted_ = false;            // candidates_ sorted by descending logit
  std::vector<float> work_;        // penalized logits, reused across calls
  std::vector<Candidate> candidates_;
  struct Edge {
    float logit;
    int32_t id;
    uint64_t mass;
  };
  std::vector<uint64_t> mass_;         // top-p's fixed-point mass per candidate
  std::vector<uint64_t> bucket_mass_;  // top-p's mass histogram
  std::vector<Edge> edge_;             // top-p's crossing bucket
  std::vector<double> weights_;    // survivors' unnormalized probabilities for the draw
  std::vector<int32_t> counts_;    // per-token counts in the penalty window, kept all-zero between calls
  std::vector<int32_t> touched_;   // ids whose count is nonzero
};

// The k most likely tokens with their log-softmax values, most likely first
// (lower id first on ties). k is clamped to [0, vocab]. For OpenAI logprobs.
std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, int k);

}  // namespace brisk
