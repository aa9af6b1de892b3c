// Loader helpers shared by tokenizer_json.cpp, tokenizer_gguf.cpp and tokenizer.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"

namespace brisk {

std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& tokenizer_json, const nlohmann::json& config,
                                               const std::string& where);
// Control tokens that end a turn by their text (<|im_end|>, <|eot_id|>, <end_of_turn>, ...),
// as llama.cpp's vocab loader guesses them.
std::vector<int32_t> eos_by_name(const std::vector<std::string>& tokens, const std::vector<uint8_t>& types);
// A special-token id from metadata (bos, eos, pad, ...): Error(kFormat) naming `key` unless
// it lies inside a vocabulary of n tokens.
void check_token_id(const std::string& key, int64_t id, int64_t n, const std::string& where);

}  // namespace brisk
