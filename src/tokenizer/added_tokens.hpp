// Added tokens (specials such as <|im_end|>, <start_of_turn>, and user-defined ones) are cut
// out of the raw text before normalization and BPE, leftmost-longest, as HF `tokenizers`'
// AddedVocabulary does with its Aho-Corasick matcher. A byte trie does the same here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brisk {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false;
};

class AddedTokenMatcher {
 public:
  void add(const AddedToken& tok);
  bool empty() const { return tokens_.empty(); }

  struct Piece {
    std::string_view text;  // plain text when id < 0
    int32_t id = -1;
  };
  // parse_special=false: only non-special added tokens are matched.
  void split(std::string_view text, bool parse_special, std::vector<Piece>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> kids;
    int32_t token = -1;  // index into tokens_
  };
  int32_t child(int32_t node, uint8_t b) const;
  std::vector<Node> nodes_{1};
  std::vector<AddedToken> tokens_;
};

}  // namespace brisk
