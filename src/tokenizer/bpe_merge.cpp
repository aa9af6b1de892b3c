// Heap + linked-list BPE, shared by the byte-level and SentencePiece encoders. A heap entry
// is re-checked when popped (the pair may have been consumed by an earlier merge), so each
// merge costs O(log n) and a 1 MB word stays fast.

#include "tokenizer/bpe_merge.hpp"

#include <queue>

namespace brisk {

void MergeTable::add(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  map_.emplace(key, std::make_pair(rank, merged));  // first (lowest) rank wins
}

bool MergeTable::find(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const {
  auto it = map_.find((uint64_t(uint32_t(left)) << 32) | uint32_t(right));
  if (it == map_.end()) return false;
  *rank = it->second.first;
  *merged = it->second.second;
  return true;
}

namespace {

struct RankItem {
  int32_t rank, pos, left_id, right_id, merged;
  bool operator<(const RankItem& o) const {  // max-heap: invert for min rank, min pos
    if (rank != o.rank) return rank > o.rank;
    return pos > o.pos;
  }
};

}  // namespace

void merge_by_rank(std::vector<int32_t>& syms, const MergeTable& merges) {
  const int32_t n = int32_t(syms.size());
  if (n < 2 || merges.empty()) return;
  std::vector<int32_t> next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  std::vector<RankItem> init;
  init.reserve(n);
  auto candidate = [&](int32_t l, std::vector<RankItem>* v, std::priority_queue<RankItem>* q) {
    int32_t r = next[l];
    if (r < 0) return;
    int32_t rank, merged;
    if (!merges.find(syms[l], syms[r], &rank, &merged)) return;
    RankItem it{rank, l, syms[l], syms[r], merged};
    if (v) v->push_back(it); else q->push(it);
  };
  for (int32_t i = 0; i + 1 < n; ++i) candidate(i, &init, nullptr);
  std::priority_queue<RankItem> heap(std::less<RankItem>(), std::move(init));
  std::vector<uint8_t> alive(n, 1);
  while (!heap.empty()) {
    RankItem it = heap.top();
    heap.pop();
    int32_t l = it.pos;
    if (!alive[l] || syms[l] != it.left_id) continue;
    int32_t r = next[l];
    if (r < 0 || syms[r] != it.right_id) continue;
    syms[l] = it.merged;
    alive[r] = 0;
    next[l] = next[r];
    if (next[r] >= 0) prev[next[r]] = l;
    if (prev[l] >= 0) candidate(prev[l], nullptr, &heap);
    candidate(l, nullptr, &heap);
  }
  int32_t w = 0;
  for (int32_t i = 0; i < n; ++i)
    if (alive[i]) syms[w++] = syms[i];
  syms.resize(w);
}

namespace {

// Max score first. Equal scores: the lower merged id, then the longer left piece (the merge
// order transformers' GGUF conversion gives Gemma's vocabulary), then the leftmost pair.
struct ScoreItem {
  float score;
  int32_t merged, left, right;
  uint32_t size, left_len;
  bool operator<(const ScoreItem& o) const {
    if (score != o.score) return score < o.score;
    if (merged != o.merged) return merged > o.merged;
    if (left_len != o.left_len) return left_len < o.left_len;
    return left > o.left;
  }
};

}  // namespace

std::vector<std::string_view> merge_by_score(std::string_view text, const std::vector<uint32_t>& starts,
                                             const ScoreFn& score_of) {
  const int32_t n = int32_t(starts.size());
  std::vector<uint32_t> start(starts), len(n);
  for (int32_t i = 0; i < n; ++i) len[i] = (i + 1 < n ? starts[i + 1] : uint32_t(text.size())) - starts[i];
  std::vector<int32_t> next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  std::priority_queue<ScoreItem> heap;
  auto candidate = [&](int32_t l) {
    int32_t r = l >= 0 ? next[l] : -1;
    if (r < 0) return;
    uint32_t size = len[l] + len[r];
    float score;
    int32_t merged;
    if (score_of(text.substr(start[l], size), &score, &merged)) heap.push({score, merged, l, r, size, len[l]});
  };
  for (int32_t i = 0; i + 1 < n; ++i) candidate(i);
  while (!heap.empty()) {
    ScoreItem it = heap.top();
    heap.pop();
    if (len[it.left] == 0 || len[it.right] == 0 || next[it.left] != it.right ||
        len[it.left] + len[it.right] != it.size)
      continue;
    len[it.left] += len[it.right];
    len[it.right] = 0;
    next[it.left] = next[it.right];
    if (next[it.right] >= 0) prev[next[it.right]] = it.left;
    candidate(prev[it.left]);
    candidate(it.left);
  }
  std::vector<std::string_view> out;
  for (int32_t i = 0; i >= 0 && i < n; i = next[i]) out.push_back(text.substr(start[i], len[i]));
  return out;
}

}  // namespace brisk
