// The vocabulary as a byte trie in preorder (which is the tokens' bytes sorted), so that the
// tokens under a node are one contiguous run: a token mask computation that rejects or
// defers a whole subtree does it in one step instead of token by token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace brisk::grammar {

class TokenTrie {
 public:
  // bytes[id]: what token id stands for; an empty string never matches (special tokens).
  explicit TokenTrie(const std::vector<std::string>& bytes);

  struct Node {
    uint8_t byte = 0;          // the edge into this node
    uint32_t subtree_end = 0;  // nodes [this, subtree_end) are this node's subtree
    uint32_t tokens = 0;       // order_[tokens, next node's tokens): the tokens ending here
  };
  const std::vector<Node>& nodes() const { return nodes_; }  // nodes_[0] is the root (no byte)
  // The tokens ending at node i, and those of its whole subtree (i included).
  std::pair<uint32_t, uint32_t> tokens_at(uint32_t i) const { return {nodes_[i].tokens, nodes_[i + 1].tokens}; }
  std::pair<uint32_t, uint32_t> tokens_under(uint32_t i) const {
    return {nodes_[i].tokens, nodes_[nodes_[i].subtree_end].tokens};
  }
  const std::vector<int32_t>& order() const { return order_; }  // token ids in trie order
  size_t vocab_size() const { return bytes_.size(); }
  size_t max_bytes() const { return max_bytes_; }  // the longest token
  const std::string& bytes(int32_t id) const { return bytes_[size_t(id)]; }

 private:
  std::vector<Node> nodes_;  // plus a sentinel at the end
  std::vector<int32_t> order_;
  std::vector<std::string> bytes_;
  size_t max_bytes_ = 0;
};

}  // namespace brisk::grammar
