#include "synthetic/synthetic_vocab.hpp"

#include <map>
#include <utility>

#include "base/error.hpp"

namespace brisk {

namespace {

const char* kTrainingText =
    "The quick brown fox jumps over the lazy dog. A language model reads text as tokens and "
    "predicts the next one. The engine keeps the weights in memory and streams them through "
    "the processor for every token it generates. Prefill reads the whole prompt at once; "
    "decode produces one token at a time. The cache holds the keys and values of every "
    "position so that attention need not recompute them. int main() { return 0; } "
    "for (int i = 0; i < n; ++i) sum += x[i] * y[i]; 0123456789 the then there these those "
    "and an in on of or to into onto it is its as at be by we he she they them this that";

// GPT-2's byte-to-unicode map: printable bytes map to themselves, the rest to U+0100 upward.
std::vector<std::string> byte_unicode_table() {
  std::vector<int> cps(256, -1);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    cps[size_t(b)] = printable ? b : next++;
  }
  std::vector<std::string> out(256);
  for (int b = 0; b < 256; ++b) {
    int cp = cps[size_t(b)];
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    }
    out[size_t(b)] = s;
  }
  return out;
}

}  // namespace

SyntheticVocab make_synthetic_vocab(int64_t vocab_size) {
  if (vocab_size < 259) throw Error(ErrorCode::kInvalidArgument, "a synthetic vocabulary needs at least 259 tokens");
  SyntheticVocab v;
  v.tokens = {"<|pad|>", "<|begin_of_text|>", "<|end_of_text|>"};
  v.token_types = {3, 3, 3};
  const auto table = byte_unicode_table();
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(table[size_t(b)]);
    v.token_types.push_back(1);
  }
  // Words as the pre-tokenizer would cut them (a leading space stays with its word).
  std::vector<std::vector<std::string>> words;
  std::string text = kTrainingText;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i + 1;
    while (j < text.size() && text[j] != ' ') ++j;
    std::vector<std::string> w;
    for (size_t k = i; k < j; ++k) w.push_back(table[uint8_t(text[k])]);
    words.push_back(std::move(w));
    i = j;
  }
  // Greedy BPE training: merge the most frequent adjacent pair (ties: smallest pair).
  while (int64_t(v.tokens.size()) < vocab_size) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& w : words)
      for (size_t k = 0; k + 1 < w.size(); ++k) ++counts[{w[k], w[k + 1]}];
    std::pair<std::string, std::string> best;
    int best_count = 1;
    for (const auto& [pair, c] : counts)
      if (c > best_count) best = pair, best_count = c;
    if (best_count < 2) break;
    v.merges.push_back(best.first + " " + best.second);
    v.tokens.push_back(best.first + best.second);
    v.token_types.push_back(1);
    for (auto& w : words) {
      std::vector<std::string> merged;
      for (size_t k = 0; k < w.size(); ++k) {
        if (k + 1 < w.size() && w[k] == best.first && w[k + 1] == best.second) {
          merged.push_back(best.first + best.second);
          ++k;
        } else {
          merged.push_back(w[k]);
        }
      }
      w = std::move(merged);
    }
  }
  for (int64_t r = 0; int64_t(v.tokens.size()) < vocab_size; ++r) {
    v.tokens.push_back("<|reserved_" + std::to_string(r) + "|>");
    v.token_types.push_back(3);
  }
  return v;
}

nlohmann::json synthetic_tokenizer_json(const SyntheticVocab& v) {
  using json = nlohmann::json;
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    vocab[v.tokens[id]] = id;
    if (v.token_types[id] == 3)
      added.push_back({{"id", id}, {"content", v.tokens[id]}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const char* qwen2_regex =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  return json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"}, {"pattern", {{"Regex", qwen2_regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                      byte_level})}}},
      {"post_processor", byte_level},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", v.merges}}},
  };
}

}  // namespace brisk
