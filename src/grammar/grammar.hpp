// The grammar every structured-output request compiles to: rules over bytes, each a list of
// alternatives, each a sequence of byte sets and references to rules. GBNF (gbnf.hpp),
// JSON Schema, regex and choice lists are all front ends that build one with GrammarBuilder;
// the matcher (matcher.hpp) runs it as a pushdown automaton one byte at a time, so tokens
// that split a UTF-8 character (byte-level BPE, byte fallback) need nothing special.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace brisk::grammar {

struct ByteSet {
  uint64_t bits[4] = {};
  void add(uint8_t b) { bits[b >> 6] |= uint64_t(1) << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) add(uint8_t(b));
  }
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  bool operator==(const ByteSet& o) const = default;
};

// A compiled grammar: every alternative's elements laid out end to end in `slots`, each
// alternative closed by an End slot, so that a parser position is one slot index. Small
// rules that are not recursive get one copy per place they are used (build), so that what
// follows them is known statically: the token masks then rarely depend on the stack.
struct Grammar {
  enum class Kind : uint8_t { Bytes, Rule, End };
  struct Slot {
    Kind kind = Kind::End;
    uint32_t arg = 0;  // Bytes: index into sets; Rule: the rule
  };
  std::vector<Slot> slots;
  std::vector<std::vector<uint32_t>> alternatives;  // per rule: the first slot of each alternative
  std::vector<ByteSet> sets;
  std::vector<std::string> rule_names;
  uint32_t root = 0;
};

// Builds a Grammar rule by rule. An element is a byte set or a rule reference; rules may be
// referenced before they are defined. build() checks that every referenced rule is defined
// and that no rule is left-recursive (the matcher could not expand it), naming the rule.
class GrammarBuilder {
 public:
  struct Element {
    bool is_rule = false;
    uint32_t index = 0;  // a rule, or a byte set
  };
  using Sequence = std::vector<Element>;

  uint32_t rule(const std::string& name);         // the rule of that name, made on first use
  uint32_t fresh_rule(const std::string& base);   // a new helper rule named after base
  bool defined(uint32_t rule) const { return defs_[rule].defined; }
  void add_alternative(uint32_t rule, Sequence seq);
  Element bytes(const ByteSet& set);
  Element byte(uint8_t b);
  static Element ref(uint32_t rule) { return Element{true, rule}; }
  Sequence literal(const std::string& text);      // one element per byte
  // Any one code point of the ranges (complemented when negate), as UTF-8 bytes.
  Element code_points(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, bool negate, const std::string& base);
  // Repetition of a sequence, min..max times (max < 0: unbounded), as helper rules.
  Element repeat(const Sequence& body, int min, int max, const std::string& base);
  // The bounds of the postfix operators * + ? (false for any other character).
  static bool quantifier(char c, int& min, int& max);
  Grammar build(const std::string& root);
  static constexpr size_t kMaxSlots = 100000;  // a bigger grammar is refused (its masks would cost too much)

 private:
  struct Def {
    std::string name;
    std::vector<Sequence> alternatives;
    bool defined = false;
  };
  struct CallGraph {
    std::vector<std::vector<uint32_t>> calls;
    std::vector<bool> recursive;
  };
  void check_left_recursion() const;
  CallGraph call_graph() const;
  uint32_t copy_rule(uint32_t r);
  void clone_shared_rules(uint32_t root);

  std::vector<Def> defs_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<ByteSet> sets_;
  size_t repeated_ = 0;  // elements the repetitions have made so far
};

}  // namespace brisk::grammar
