// Arbitrary bytes through the real tokenizer kinds (byte-level BPE with a PCRE2
// pre-tokenizer, SentencePiece-style BPE): encode with and without special-token parsing,
// and the input read as token ids through the whole-sequence and incremental decoders.
#include <cstring>

#include "base/error.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace brisk;

namespace {
std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
  static std::vector<std::unique_ptr<Tokenizer>> all = [] {
    std::vector<std::unique_ptr<Tokenizer>> t;
    const std::string dir = BRISK_SOURCE_DIR "/tests/golden/tokenizer/";
    for (const char* name : {"qwen2_mini", "llama3_mini", "gemma_mini"})
      t.push_back(load_tokenizer_json(dir + name + ".tokenizer.json"));
    return t;
  }();
  return all;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto& tok : tokenizers()) {
    tok->encode(text, true, true);
    const auto ids = tok->encode(text, false, false);
    tok->decode(ids, false);
    std::vector<int32_t> raw;
    for (size_t i = 0; i + 2 <= size && raw.size() < 512; i += 2) {
      uint16_t v;
      std::memcpy(&v, data + i, 2);
      raw.push_back(int32_t(v % uint32_t(tok->vocab_size())));
    }
    tok->decode(raw, true);
    IncrementalDetokenizer detok(*tok, size % 2 == 0);
    std::string out;
    for (int32_t id : raw) out += detok.push(id);
    out += detok.flush();
  }
  return 0;
}
