// The one concrete Tokenizer behind both loaders. tokenizer_json.cpp and tokenizer_gguf.cpp
// only translate their file into a TokenizerSpec; vocab_tokenizer.cpp builds the tables and
// runs added-token splitting, decoding and post-processing; bpe_tokenizer.cpp (byte-level)
// and spm_tokenizer.cpp (SentencePiece-style) each encode one plain-text segment.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.hpp"
#include "tokenizer/bpe_merge.hpp"
#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace brisk {

enum class TokenizerKind { kByteLevel, kSpm };

// GGUF token types.
enum TokenType : uint8_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kByteLevel;
  std::string where;                       // file, for error messages
  std::string vocab_key;                   // where the token list came from, for error messages
  std::vector<std::string> tokens;         // id -> stored text (byte-level or "▁" form)
  std::vector<uint8_t> types;              // TokenType per id
  std::vector<float> scores;               // SPM from GGUF: merges chosen by score
  std::vector<std::pair<std::string, std::string>> merges;  // by rank; empty => by score
  std::vector<AddedToken> added;           // matched in raw text before the model runs
  std::vector<std::string> split_regexes;  // byte-level pre-tokenizer, applied in sequence
  bool nfc = false;                        // NFC normalizer (Qwen2)
  bool ignore_merges = false;              // a whole word found in the vocab is one token
  bool byte_fallback = false;              // unknown chars -> <0xNN> tokens
  bool fuse_unk = false;
  int32_t unk_id = -1;
  bool add_space_prefix = false;           // SPM: "▁" before the first segment
  std::vector<int32_t> prefix_ids, suffix_ids;  // what add_special adds
  int32_t bos_id = -1;
  std::vector<int32_t> eos_ids;
};

class VocabTokenizer final : public Tokenizer {
 public:
  explicit VocabTokenizer(TokenizerSpec spec);

  std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                              bool parse_special = true) const override;
  std::string token_bytes(int32_t id) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const override;
  int32_t vocab_size() const override { return int32_t(spec_.tokens.size()); }
  bool is_special(int32_t id) const override;
  const std::string& token_text(int32_t id) const override;

  TokenizerKind kind() const { return spec_.kind; }
  bool add_space_prefix() const { return spec_.add_space_prefix; }
  int32_t find_token(std::string_view text) const;  // -1 when absent

 private:
  void check_id(int32_t id) const;
  void check_byte_tokens() const;
  void check_special_ids() const;
  void encode_segment(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  void encode_bytelevel(std::string_view text, std::vector<int32_t>& out) const;
  void encode_bytelevel_word(std::string_view word, std::vector<int32_t>& out) const;
  void encode_spm(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  void spm_symbols_by_rank(std::string_view norm, std::vector<int32_t>& out) const;
  void spm_symbols_by_score(std::string_view norm, std::vector<int32_t>& out) const;
  void push_bytes_fallback(std::string_view piece, std::vector<int32_t>& out) const;

  TokenizerSpec spec_;
  StringMap<int32_t> vocab_;          // model vocab text -> id
  std::vector<uint8_t> special_;      // per id
  std::vector<uint8_t> added_;        // per id: an added token (decoded as its text)
  std::vector<int16_t> byte_of_;      // SPM: id -> byte for <0xNN> tokens, else -1
  int32_t byte_id_[256];              // SPM: <0xNN> ids; byte-level: single-byte-char ids
  MergeTable merges_;
  AddedTokenMatcher matcher_;
  std::vector<std::unique_ptr<SplitRegex>> regexes_;
  // Pre-token word -> ids (byte-level); bounded, cleared when full.
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerSpec spec);

// Pre-tokenizer patterns by name.
extern const char* const kQwen2Regex;
extern const char* const kLlama3Regex;
extern const char* const kGpt2Regex;

}  // namespace brisk
