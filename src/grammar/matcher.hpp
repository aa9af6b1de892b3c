// The grammar as a pushdown automaton over bytes. A parser state is a set of entries, each a
// byte-set slot to match next over a continuation stack (where to resume when the slot's
// rule ends); stacks are shared and interned, so copying a state copies a few integers. A
// state also says whether the root rule may end here (accept). The matcher holds no
// per-sequence data: each sequence keeps its State and advances it by the bytes of each
// sampled token, as llama.cpp's grammar stacks do, but a byte at a time.
#pragma once

#include <compare>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.hpp"

namespace brisk::grammar {

struct Entry {
  uint32_t slot = 0;   // a Bytes slot
  uint32_t stack = 0;  // continuation stack (Stacks)
  auto operator<=>(const Entry&) const = default;
};

struct State {
  std::vector<Entry> entries;  // sorted, unique
  bool accept = false;         // the root may end here
  bool approx_accept = false;  // ... on a guessed stack (token-mask precomputation only)
  bool dead() const { return entries.empty() && !accept && !approx_accept; }
};

// Interned continuation stacks: node = (slot to resume at, parent node). For the token-mask
// precomputation there are also "caller unknown" nodes, one per rule: popping one resumes at
// every place the rule is called from (an over-approximation of the real stack), and all
// that follows is marked approximate.
class Stacks {
 public:
  static constexpr uint32_t kBottom = 0;  // below the root: ending here accepts
  Stacks();
  uint32_t push(uint32_t resume_slot, uint32_t parent);
  uint32_t unknown_caller(uint32_t rule, bool approximate);
  bool is_unknown(uint32_t node) const { return nodes_[node].second == kNoParent; }
  bool approximate(uint32_t node) const { return approx_[node]; }
  uint32_t resume_slot(uint32_t node) const { return nodes_[node].first; }  // (the rule, when unknown)
  uint32_t parent(uint32_t node) const { return nodes_[node].second; }
  size_t size() const { return nodes_.size(); }

 private:
  static constexpr uint32_t kNoParent = ~0u;
  uint32_t add(uint32_t first, uint32_t second, bool approximate);
  std::vector<std::pair<uint32_t, uint32_t>> nodes_;
  std::vector<uint8_t> approx_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::unordered_map<uint64_t, uint32_t> unknown_;
};

// Where each rule is called from: (Rule slot, calling rule) pairs, for the precomputation.
using CallSites = std::vector<std::vector<std::pair<uint32_t, uint32_t>>>;

class Matcher {
 public:
  explicit Matcher(const Grammar& g, const CallSites* callers = nullptr) : g_(g), callers_(callers) {}
  const Grammar& grammar() const { return g_; }

  State start();                                 // before the first byte
  State at(uint32_t slot, uint32_t stack);       // expanded from a slot (any kind) over a stack
  uint32_t push(uint32_t resume_slot, uint32_t parent) { return stacks_.push(resume_slot, parent); }
  Stacks& stacks() { return stacks_; }
  void advance(const State& s, uint8_t b, State& out);
  bool advance(State& s, std::string_view bytes);  // false (s dead) when some byte is refused
  bool allows(const State& s, uint8_t b) const;

 private:
  void expand(uint32_t slot, uint32_t stack, State& out, int depth);
  void finish(State& out);

  void end_unknown(uint32_t node, State& out, int depth);

  const Grammar& g_;
  const CallSites* callers_;
  Stacks stacks_;
  std::vector<uint32_t> popped_unknown_;  // in this expansion (each is popped once)
};

}  // namespace brisk::grammar
