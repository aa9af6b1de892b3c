#include "grammar/token_trie.hpp"

#include <algorithm>
#include <numeric>

namespace brisk::grammar {

// Sorted tokens are the trie's preorder: each token opens one node per byte beyond the
// prefix it shares with the previous token; a node's subtree ends where a later token first
// differs within its prefix.
TokenTrie::TokenTrie(const std::vector<std::string>& bytes) : bytes_(bytes) {
  for (const std::string& b : bytes) max_bytes_ = std::max(max_bytes_, b.size());
  std::vector<int32_t> ids(bytes.size());
  std::iota(ids.begin(), ids.end(), 0);
  ids.erase(std::remove_if(ids.begin(), ids.end(), [&](int32_t i) { return bytes[size_t(i)].empty(); }), ids.end());
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return bytes[size_t(a)] < bytes[size_t(b)]; });
  nodes_.push_back(Node{});
  std::vector<uint32_t> path = {0};  // nodes of the current prefix, by depth
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& t = bytes[size_t(id)];
    size_t common = 0;
    if (prev)
      while (common < prev->size() && common < t.size() && (*prev)[common] == t[common]) ++common;
    for (size_t d = path.size() - 1; d > common; --d) nodes_[path[d]].subtree_end = uint32_t(nodes_.size());
    path.resize(common + 1);
    for (size_t d = common; d < t.size(); ++d) {
      path.push_back(uint32_t(nodes_.size()));
      nodes_.push_back(Node{uint8_t(t[d]), 0, uint32_t(order_.size())});
    }
    order_.push_back(id);  // ends at the last node opened (or at path.back() for a duplicate)
    prev = &t;
  }
  for (uint32_t n : path) nodes_[n].subtree_end = uint32_t(nodes_.size());
  nodes_.push_back(Node{0, uint32_t(nodes_.size()) + 1, uint32_t(order_.size())});  // sentinel
  // A node's tokens start where the first token through it was appended; a node opened by a
  // longer token has no tokens of its own, so its start must move to its first descendant's.
  for (size_t i = nodes_.size() - 1; i-- > 1;) {
    const uint32_t next = nodes_[i + 1].tokens;
    if (nodes_[i].tokens > next) nodes_[i].tokens = next;
  }
}

}  // namespace brisk::grammar
