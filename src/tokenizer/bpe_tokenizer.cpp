// Byte-level BPE (GPT-2 family: Qwen2/Qwen3, Llama 3): NFC when the model asks for it, the
// pre-tokenizer regexes, each word mapped byte -> unicode char, merges by rank. Words are
// cached: chat text repeats the same words all the time.

#include "base/error.hpp"
#include "tokenizer/byte_unicode.hpp"
#include "tokenizer/nfc.hpp"
#include "tokenizer/tokenizer_impl.hpp"

namespace brisk {

namespace {
constexpr size_t kCacheMaxEntries = 1 << 16;
constexpr size_t kCacheMaxWord = 256;
}  // namespace

void VocabTokenizer::encode_bytelevel(std::string_view text, std::vector<int32_t>& out) const {
  std::string normalized;
  if (spec_.nfc && !is_nfc_quick(text)) {
    normalized = nfc(text);
    text = normalized;
  }
  std::vector<std::string_view> words{text}, next;
  for (auto& re : regexes_) {
    next.clear();
    for (auto w : words) re->split(w, next);
    words.swap(next);
  }
  for (auto w : words) encode_bytelevel_word(w, out);
}

void VocabTokenizer::encode_bytelevel_word(std::string_view word, std::vector<int32_t>& out) const {
  const bool cacheable = word.size() <= kCacheMaxWord;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(std::string(word));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> syms;
  syms.reserve(word.size());
  bool whole = false;
  if (spec_.ignore_merges) {
    std::string mapped;
    bytes_to_unicode(word, mapped);
    if (int32_t id = find_token(mapped); id >= 0) {
      syms.push_back(id);
      whole = true;
    }
  }
  if (!whole) {
    for (unsigned char c : word) {
      int32_t id = byte_id_[c];
      if (id < 0) {
        if (spec_.unk_id < 0)
          throw Error(ErrorCode::kFormat, "byte-level vocabulary lacks the token for byte " + std::to_string(c),
                      spec_.where);
        id = spec_.unk_id;
      }
      syms.push_back(id);
    }
    merge_by_rank(syms, merges_);
  }
  out.insert(out.end(), syms.begin(), syms.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(syms));
  }
}

}  // namespace brisk
