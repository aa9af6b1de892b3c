// Teacher-forced scoring: the logits of every position of a token sequence, from one
// prefill over an empty cache (for reference comparisons, `brisk logits` and the API's
// score()). Generation goes through EngineCore; this only reads the model.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.hpp"

namespace brisk {

// Row i holds the logits after tokens[0..i]; tokens.size() x vocab floats. Throws
// Error(kInvalidArgument) for an empty sequence or one longer than the trained context.
std::vector<float> score_tokens(Model& model, const std::vector<int32_t>& tokens);

}  // namespace brisk
