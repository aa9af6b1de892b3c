// SentencePiece-style BPE (Gemma 3): spaces become "▁" (plus a leading one when the model
// adds a space prefix), then either merges by rank over chars with byte fallback (HF
// tokenizer.json) or merges by vocab score (GGUF, as llama.cpp's llm_tokenizer_spm).
// Chars that no piece covers become <0xNN> byte tokens, or <unk> without them.

#include "tokenizer/tokenizer_impl.hpp"
#include "base/utf8.hpp"

namespace brisk {

namespace {
constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁"

// Char boundaries; each byte of an invalid sequence is a symbol of its own.
std::vector<uint32_t> char_starts(std::string_view s) {
  std::vector<uint32_t> starts;
  starts.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    starts.push_back(uint32_t(i));
    size_t l = utf8::valid_len(s, i);
    i += l ? l : 1;
  }
  return starts;
}
}  // namespace

void VocabTokenizer::encode_spm(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  std::string norm;
  norm.reserve(text.size() + 8);
  if (spec_.add_space_prefix && at_start) norm += kSpace;
  for (char c : text) {
    if (c == ' ') norm += kSpace;
    else norm += c;
  }
  if (spec_.merges.empty() && !spec_.scores.empty()) spm_symbols_by_score(norm, out);
  else spm_symbols_by_rank(norm, out);
}

void VocabTokenizer::spm_symbols_by_rank(std::string_view norm, std::vector<int32_t>& out) const {
  if (spec_.ignore_merges) {
    if (int32_t id = find_token(norm); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<int32_t> syms;
  syms.reserve(norm.size());
  auto starts = char_starts(norm);
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t e = k + 1 < starts.size() ? starts[k + 1] : norm.size();
    std::string_view ch = norm.substr(starts[k], e - starts[k]);
    if (int32_t id = find_token(ch); id >= 0) syms.push_back(id);
    else push_bytes_fallback(ch, syms);
  }
  merge_by_rank(syms, merges_);
  out.insert(out.end(), syms.begin(), syms.end());
}

void VocabTokenizer::spm_symbols_by_score(std::string_view norm, std::vector<int32_t>& out) const {
  auto starts = char_starts(norm);
  auto score_of = [this](std::string_view piece, float* score, int32_t* id_out) {
    int32_t id = find_token(piece);
    if (id < 0) return false;
    *id_out = id;
    *score = size_t(id) < spec_.scores.size() ? spec_.scores[id] : 0.f;
    return true;
  };
  for (auto piece : merge_by_score(norm, starts, score_of)) {
    if (int32_t id = find_token(piece); id >= 0) out.push_back(id);
    else push_bytes_fallback(piece, out);
  }
}

}  // namespace brisk
