// The vocabulary of a synthetic checkpoint: a real byte-level BPE (GPT-2 byte map, merges
// learned from a built-in text) so that `brisk run` works on generated models end to end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace brisk {

struct SyntheticVocab {
  std::vector<std::string> tokens;     // byte-level unicode strings
  std::vector<int32_t> token_types;    // GGUF token_type: 1 normal, 3 control
  std::vector<std::string> merges;     // "a b", by rank
  int32_t bos_id = 1, eos_id = 2, pad_id = 0;
};

// Exactly `vocab_size` tokens (>= 259): three specials, 256 bytes, learned merges, then
// reserved control tokens.
SyntheticVocab make_synthetic_vocab(int64_t vocab_size);

// The same vocabulary as an HF tokenizer.json (Qwen2-style pre-tokenizer).
nlohmann::json synthetic_tokenizer_json(const SyntheticVocab& v);

}  // namespace brisk
