#include "engine/score.hpp"

#include <algorithm>
#include <numeric>

#include "base/error.hpp"

namespace brisk {

std::vector<float> score_tokens(Model& model, const std::vector<int32_t>& tokens) {
  constexpr int64_t kChunk = 512;  // tokens per forward pass; bounds the scratch memory
  const int64_t n = int64_t(tokens.size()), V = model.hparams().vocab;
  if (n == 0) throw Error(ErrorCode::kInvalidArgument, "the prompt is empty", "prompt");
  if (n > model.hparams().context)
    throw Error(ErrorCode::kLimit, "the sequence has " + std::to_string(n) + " tokens, beyond the model's context of " +
                                       std::to_string(model.hparams().context), "prompt");
  for (int32_t id : tokens)
    if (id < 0 || id >= V) throw Error(ErrorCode::kInvalidArgument, "token id out of range", "prompt");
  Transformer& tf = model.transformer();
  KvCache kv = tf.new_kv_cache(n);
  std::vector<float> all(size_t(n * V));
  try {
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), 0);
    for (int64_t b = 0; b < n; b += kChunk) {
      const int64_t m = std::min(kChunk, n - b);
      tf.forward(tokens.data() + b, pos.data() + b, m, kv, all.data() + b * V, /*all_logits=*/true);
    }
  } catch (...) {
    tf.free_kv_cache(kv);
    throw;
  }
  tf.free_kv_cache(kv);
  return all;
}

}  // namespace brisk
