#include "grammar/token_mask.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace brisk::grammar {
namespace {

constexpr uint32_t kUnreachable = ~0u;

// The walk of one slot's trie: each node's state is its parent's advanced by the node's
// byte. A token is accepted where a path that never guessed the stack takes all its bytes,
// uncertain where only guessed paths do, and rejected (with its whole subtree) where none do.
// The states met are interned and their transitions memoized (a DFA built as it is walked):
// a string's loop, say, revisits a handful of states across the whole vocabulary.
struct Walk {
  enum Verdict : uint8_t { kDead, kUncertain, kExact };
  const TokenTrie& trie;
  Matcher& m;
  std::vector<int32_t>& accepted;
  std::vector<int32_t>& uncertain;
  std::vector<State> states;                      // interned
  std::vector<Verdict> verdict;                   // per interned state
  std::vector<std::array<int32_t, 256>> next;     // per interned state: -1 not computed yet
  std::unordered_map<uint64_t, std::vector<int32_t>> by_hash;

  static uint64_t hash(const State& s) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t(s.accept) << 1 | uint64_t(s.approx_accept));
    for (const Entry& e : s.entries) h = (h ^ (uint64_t(e.slot) << 32 | e.stack)) * 1099511628211ull;
    return h;
  }
  int32_t intern(State&& s) {
    auto& bucket = by_hash[hash(s)];
    for (int32_t id : bucket)
      if (states[size_t(id)].entries == s.entries && states[size_t(id)].accept == s.accept &&
          states[size_t(id)].approx_accept == s.approx_accept)
        return id;
    bool exact = s.accept;
    for (const Entry& e : s.entries) exact = exact || !m.stacks().approximate(e.stack);
    verdict.push_back(exact ? kExact : s.dead() ? kDead : kUncertain);
    states.push_back(std::move(s));
    next.emplace_back().fill(-1);
    bucket.push_back(int32_t(states.size() - 1));
    return int32_t(states.size() - 1);
  }
  int32_t step(int32_t from, uint8_t b) {
    int32_t to = next[size_t(from)][b];
    if (to >= 0) return to;
    State out;
    m.advance(states[size_t(from)], b, out);
    to = intern(std::move(out));
    next[size_t(from)][b] = to;
    return to;
  }
  void take(std::pair<uint32_t, uint32_t> range, std::vector<int32_t>& into) {
    const auto& order = trie.order();
    into.insert(into.end(), order.begin() + range.first, order.begin() + range.second);
  }
  void children(uint32_t node, int32_t state) {
    const auto& nodes = trie.nodes();
    for (uint32_t c = node + 1; c < nodes[node].subtree_end; c = nodes[c].subtree_end) {
      const int32_t to = step(state, nodes[c].byte);
      if (verdict[size_t(to)] == kExact)
        take(trie.tokens_at(c), accepted);
      else if (verdict[size_t(to)] == kUncertain)
        take(trie.tokens_at(c), uncertain);
      if (!states[size_t(to)].entries.empty()) children(c, to);
    }
  }
};

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar g, std::shared_ptr<const TokenTrie> vocab)
    : g_(std::move(g)), vocab_(std::move(vocab)) {
  slot_index_.assign(g_.slots.size(), -1);
  CallSites callers(g_.alternatives.size());
  for (size_t r = 0; r < g_.alternatives.size(); ++r)
    for (uint32_t s : g_.alternatives[r])
      for (; g_.slots[s].kind != Grammar::Kind::End; ++s)
        if (g_.slots[s].kind == Grammar::Kind::Rule) callers[g_.slots[s].arg].push_back({s, uint32_t(r)});
  Matcher local(g_, &callers);
  const std::vector<uint32_t> base = base_stacks(local);
  for (size_t r = 0; r < g_.alternatives.size(); ++r) {
    if (base[r] == kUnreachable) continue;
    for (uint32_t s : g_.alternatives[r])
      for (; g_.slots[s].kind != Grammar::Kind::End; ++s)
        if (g_.slots[s].kind == Grammar::Kind::Bytes) classify(s, base[r], local);
  }
}

std::vector<uint32_t> CompiledGrammar::base_stacks(Matcher& local) const {
  const size_t n = g_.alternatives.size();
  std::vector<int> uses(n, 0);
  std::vector<uint32_t> site(n, 0), caller(n, 0);
  std::vector<bool> reach(n, false);
  std::vector<uint32_t> todo = {g_.root};
  reach[g_.root] = true;
  while (!todo.empty()) {
    const uint32_t r = todo.back();
    todo.pop_back();
    for (uint32_t s : g_.alternatives[r])
      for (; g_.slots[s].kind != Grammar::Kind::End; ++s) {
        if (g_.slots[s].kind != Grammar::Kind::Rule) continue;
        const uint32_t c = g_.slots[s].arg;
        const bool tail = g_.slots[s + 1].kind == Grammar::Kind::End;
        if (!(tail && c == r)) ++uses[c], site[c] = s, caller[c] = r;  // a self tail call changes nothing
        if (!reach[c]) reach[c] = true, todo.push_back(c);
      }
  }
  std::vector<uint32_t> base(n, kUnreachable);
  std::vector<uint8_t> state(n, 0);  // 1: being resolved (a cycle of single callers: unknown)
  auto resolve = [&](auto&& self, uint32_t r) -> uint32_t {
    if (base[r] != kUnreachable || !reach[r]) return base[r];
    if (state[r] == 1) return local.stacks().unknown_caller(r, false);
    state[r] = 1;
    uint32_t b = local.stacks().unknown_caller(r, false);
    if (r == g_.root && uses[r] == 0)
      b = Stacks::kBottom;
    else if (uses[r] == 1 && !(r == g_.root)) {
      const uint32_t under = self(self, caller[r]);
      const bool tail = g_.slots[site[r] + 1].kind == Grammar::Kind::End;  // (as Matcher::expand)
      b = tail ? under : local.push(site[r] + 1, under);
    }
    state[r] = 2;
    return base[r] = b;
  };
  for (uint32_t r = 0; r < n; ++r) resolve(resolve, r);
  return base;
}

void CompiledGrammar::classify(uint32_t slot, uint32_t base, Matcher& local) {
  std::vector<int32_t> accepted, uncertain;
  Walk w{*vocab_, local, accepted, uncertain, {}, {}, {}, {}};
  State first;
  first.entries = {Entry{slot, base}};
  w.children(0, w.intern(std::move(first)));
  SlotTokens t;
  if (accepted.size() * 32 < vocab_->vocab_size()) {
    std::sort(accepted.begin(), accepted.end());
    t.accepted = std::move(accepted);
  } else {
    t.accepted_bits.assign(words(), 0);
    for (int32_t id : accepted) t.accepted_bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
  }
  std::sort(uncertain.begin(), uncertain.end());
  t.uncertain = std::move(uncertain);
  slot_index_[slot] = int32_t(tokens_.size());
  tokens_.push_back(std::move(t));
}

void CompiledGrammar::mask(Matcher& m, const State& s, uint64_t* bits) const {
  const size_t n = words();
  std::fill(bits, bits + n, 0);
  State one;
  for (const Entry& e : s.entries) {
    const SlotTokens& t = tokens_[size_t(slot_index_[e.slot])];
    if (!t.accepted_bits.empty())
      for (size_t i = 0; i < n; ++i) bits[i] |= t.accepted_bits[i];
    for (int32_t id : t.accepted) bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    for (int32_t id : t.uncertain) {
      if ((bits[size_t(id) >> 6] >> (id & 63)) & 1) continue;
      one.entries = {e};
      one.accept = one.approx_accept = false;
      if (m.advance(one, vocab_->bytes(id)) && (!one.entries.empty() || one.accept))
        bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    }
  }
}

CompiledGrammar::Stats CompiledGrammar::stats() const {
  Stats st;
  st.slots = tokens_.size();
  for (const SlotTokens& t : tokens_) {
    size_t a = t.accepted.size();
    for (uint64_t w : t.accepted_bits) a += size_t(__builtin_popcountll(w));
    st.accepted += a;
    st.uncertain += t.uncertain.size();
  }
  return st;
}

}  // namespace brisk::grammar
