// The BPE merge loops. By rank (HF `tokenizers` BPE: lowest-rank adjacent pair first, leftmost
// on ties, as its Word::merge_all) over symbol ids, and by score (SentencePiece / llama.cpp
// llm_tokenizer_spm: the adjacent pair whose concatenation is in the vocab with the highest
// score, leftmost on ties) over byte ranges. Both O(n log n) with a heap and a linked list.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace brisk {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

class MergeTable {
 public:
  void add(int32_t left, int32_t right, int32_t rank, int32_t merged);
  // false when (left, right) is not a merge
  bool find(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const;
  bool empty() const { return map_.empty(); }

 private:
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> map_;
};

// Merges `syms` in place.
void merge_by_rank(std::vector<int32_t>& syms, const MergeTable& merges);

// Splits `text` (already cut into symbols at `starts`, one per char) into the pieces the
// score rule leaves; `score_of` returns false when a piece is not in the vocab.
using ScoreFn = std::function<bool(std::string_view, float* score, int32_t* id)>;
std::vector<std::string_view> merge_by_score(std::string_view text, const std::vector<uint32_t>& starts,
                                             const ScoreFn& score_of);

}  // namespace brisk
