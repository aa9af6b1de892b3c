// Trie walk for added tokens: at each byte the longest added token starting there wins, the
// first position with a match wins; lstrip/rstrip swallow neighbouring whitespace and
// single_word tokens match only between non-word characters (HF AddedToken flags).

#include "tokenizer/added_tokens.hpp"

#include <cctype>

namespace brisk {

int32_t AddedTokenMatcher::child(int32_t node, uint8_t b) const {
  for (auto& [k, v] : nodes_[node].kids)
    if (k == b) return v;
  return -1;
}

void AddedTokenMatcher::add(const AddedToken& tok) {
  if (tok.content.empty()) return;
  int32_t node = 0;
  for (unsigned char b : tok.content) {
    int32_t c = child(node, b);
    if (c < 0) {
      c = int32_t(nodes_.size());
      nodes_[node].kids.emplace_back(b, c);
      nodes_.emplace_back();
    }
    node = c;
  }
  if (nodes_[node].token >= 0) return;  // first definition wins
  nodes_[node].token = int32_t(tokens_.size());
  tokens_.push_back(tok);
}

namespace {

bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_word(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

}  // namespace

void AddedTokenMatcher::split(std::string_view text, bool parse_special, std::vector<Piece>& out) const {
  size_t plain = 0;  // start of the pending plain text
  size_t i = 0;
  while (i < text.size()) {
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t j = i; j < text.size(); ++j) {
      node = child(node, uint8_t(text[j]));
      if (node < 0) break;
      int32_t t = nodes_[node].token;
      if (t < 0) continue;
      const AddedToken& tok = tokens_[t];
      if (tok.special && !parse_special) continue;
      if (tok.single_word && ((i > 0 && is_word(uint8_t(text[i - 1]))) ||
                              (j + 1 < text.size() && is_word(uint8_t(text[j + 1])))))
        continue;
      best = t;
      best_end = j + 1;
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = tokens_[best];
    size_t start = i, end = best_end;
    if (tok.lstrip)
      while (start > plain && is_ws(uint8_t(text[start - 1]))) --start;
    if (tok.rstrip)
      while (end < text.size() && is_ws(uint8_t(text[end]))) ++end;
    if (start > plain) out.push_back({text.substr(plain, start - plain), -1});
    out.push_back({text.substr(start, end - start), tok.id});
    plain = i = end;
  }
  if (plain < text.size()) out.push_back({text.substr(plain), -1});
}

}  // namespace brisk
