#include "grammar/matcher.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace brisk::grammar {
namespace {
constexpr int kMaxDepth = 2000;            // nesting of rules expanded without a byte
constexpr size_t kMaxEntries = 1u << 16;  // a state this wide means a hopelessly ambiguous grammar

void check_depth(int depth) {
  if (depth > kMaxDepth) throw Error(ErrorCode::kInvalidArgument, "grammar nests rules too deeply (over 2000)");
}
}  // namespace

Stacks::Stacks() { add(0, 0, false); }

uint32_t Stacks::add(uint32_t first, uint32_t second, bool approximate) {
  nodes_.push_back({first, second});
  approx_.push_back(approximate);
  return uint32_t(nodes_.size() - 1);
}

uint32_t Stacks::push(uint32_t resume_slot, uint32_t parent) {
  const uint64_t key = uint64_t(resume_slot) << 32 | parent;
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  const uint32_t id = add(resume_slot, parent, approx_[parent]);
  index_.emplace(key, id);
  return id;
}

uint32_t Stacks::unknown_caller(uint32_t rule, bool approximate) {
  const uint64_t key = uint64_t(rule) << 1 | uint64_t(approximate);
  auto it = unknown_.find(key);
  if (it != unknown_.end()) return it->second;
  const uint32_t id = add(rule, kNoParent, approximate);
  unknown_.emplace(key, id);
  return id;
}

// Follows rule references and rule ends from `slot` until byte-set slots, adding each as an
// entry; a rule's end resumes its caller, and the bottom stack's end accepts.
void Matcher::expand(uint32_t slot, uint32_t stack, State& out, int depth) {
  check_depth(depth);
  const Grammar::Slot& s = g_.slots[slot];
  switch (s.kind) {
    case Grammar::Kind::Bytes:
      out.entries.push_back({slot, stack});
      if (out.entries.size() > kMaxEntries)
        throw Error(ErrorCode::kInvalidArgument, "grammar is too ambiguous (over 65536 parses at once)");
      return;
    case Grammar::Kind::Rule: {
      // A reference that ends its alternative resumes where the alternative would: no new
      // stack node, so repetitions (tail ::= item tail | "") run in constant stack.
      const bool tail_call = g_.slots[slot + 1].kind == Grammar::Kind::End;
      const uint32_t below = tail_call ? stack : stacks_.push(slot + 1, stack);
      for (uint32_t alt : g_.alternatives[s.arg]) expand(alt, below, out, depth + 1);
      return;
    }
    case Grammar::Kind::End:
      if (stack == Stacks::kBottom)
        out.accept = true;
      else if (stacks_.is_unknown(stack))
        end_unknown(stack, out, depth);
      else
        expand(stacks_.resume_slot(stack), stacks_.parent(stack), out, depth + 1);
      return;
  }
}

// The end of a rule whose caller is unknown: resume after each place it is called from
// (the root may also end the sentence), approximately from here on.
void Matcher::end_unknown(uint32_t node, State& out, int depth) {
  if (std::find(popped_unknown_.begin(), popped_unknown_.end(), node) != popped_unknown_.end()) return;
  popped_unknown_.push_back(node);
  const uint32_t rule = stacks_.resume_slot(node);
  if (rule == g_.root) out.approx_accept = true;
  if (!callers_) return;
  for (auto [site, caller] : (*callers_)[rule])
    expand(site + 1, stacks_.unknown_caller(caller, true), out, depth + 1);
}

void Matcher::finish(State& out) {
  popped_unknown_.clear();
  std::sort(out.entries.begin(), out.entries.end());
  out.entries.erase(std::unique(out.entries.begin(), out.entries.end()), out.entries.end());
}

State Matcher::start() {
  State s;
  for (uint32_t alt : g_.alternatives[g_.root]) expand(alt, Stacks::kBottom, s, 0);
  finish(s);
  return s;
}

State Matcher::at(uint32_t slot, uint32_t stack) {
  State s;
  expand(slot, stack, s, 0);
  finish(s);
  return s;
}

bool Matcher::allows(const State& s, uint8_t b) const {
  for (const Entry& e : s.entries)
    if (g_.sets[g_.slots[e.slot].arg].has(b)) return true;
  return false;
}

void Matcher::advance(const State& s, uint8_t b, State& out) {
  out.entries.clear();
  out.accept = out.approx_accept = false;
  for (const Entry& e : s.entries)
    if (g_.sets[g_.slots[e.slot].arg].has(b)) expand(e.slot + 1, e.stack, out, 0);
  finish(out);
}

bool Matcher::advance(State& s, std::string_view bytes) {
  State next;
  for (unsigned char b : bytes) {
    advance(s, b, next);
    std::swap(s, next);
    if (s.dead()) return false;
  }
  return true;
}

}  // namespace brisk::grammar
