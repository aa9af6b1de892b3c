// Which tokens a grammar allows next, for one vocabulary. Compiling does, once per grammar,
// the work that does not depend on the parser's stack (as xgrammar does): for every byte-set
// slot, a walk of the vocabulary trie from that slot alone sorts the tokens into accepted
// (matched within the slot's rule and what follows it there), rejected, and uncertain (they
// run past the rule's end, so the stack below decides). At run time a state's mask is the
// union over its entries of the accepted tokens plus the uncertain ones that its real stack
// takes, which are few: a mask costs microseconds, not a pass over the vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.hpp"
#include "grammar/matcher.hpp"
#include "grammar/token_trie.hpp"

namespace brisk::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(Grammar g, std::shared_ptr<const TokenTrie> vocab);
  const Grammar& grammar() const { return g_; }
  const TokenTrie& vocab() const { return *vocab_; }
  size_t words() const { return (vocab_->vocab_size() + 63) / 64; }

  // Sets the bits of the tokens allowed after state s (m: a Matcher of this grammar, which
  // made s); bits has words() words and is cleared first. End of sequence is allowed when
  // s.accept (the caller decides which token that is).
  void mask(Matcher& m, const State& s, uint64_t* bits) const;

  // Token counts of the compilation, for tests and the cost table.
  struct Stats {
    size_t slots = 0, accepted = 0, uncertain = 0;
  };
  Stats stats() const;

 private:
  struct SlotTokens {
    std::vector<uint64_t> accepted_bits;  // either a bitset over the vocabulary...
    std::vector<int32_t> accepted;        // ...or a list, whichever is smaller
    std::vector<int32_t> uncertain;
  };
  void classify(uint32_t slot, uint32_t base, Matcher& local);
  std::vector<uint32_t> base_stacks(Matcher& local) const;

  Grammar g_;
  std::shared_ptr<const TokenTrie> vocab_;
  std::vector<int32_t> slot_index_;  // per slot: index into tokens_, or -1 (not a byte set)
  std::vector<SlotTokens> tokens_;
};

}  // namespace brisk::grammar
