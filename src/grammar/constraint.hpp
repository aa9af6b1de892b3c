// A request's OutputConstraint as the engine uses it: compiled once per distinct constraint
// and vocabulary (ConstraintCache), then one TokenConstraint per sequence, which gives the
// mask of the next token and follows the tokens sampled.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "brisk/types.hpp"
#include "grammar/token_mask.hpp"

namespace brisk::grammar {

// The grammar of a constraint; a bad schema, grammar or regex is kInvalidArgument naming it.
Grammar constraint_grammar(const OutputConstraint& c);

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const CompiledGrammar> g, std::vector<int32_t> end_ids);
  // The tokens allowed next (words() words): the grammar's, and the end-of-sequence ids
  // where the text may end here.
  void mask(uint64_t* bits);
  size_t words() const { return g_->words(); }
  bool accept(int32_t id);  // false: the token does not continue the text (not advanced)
  bool complete() const { return state_.entries.empty() && state_.accept; }  // only the end may follow

 private:
  std::shared_ptr<const CompiledGrammar> g_;
  Matcher matcher_;
  State state_;
  std::vector<int32_t> end_ids_;
};

// Compiled constraints by their text, for one vocabulary; safe to use from several threads.
class ConstraintCache {
 public:
  explicit ConstraintCache(std::shared_ptr<const TokenTrie> vocab) : vocab_(std::move(vocab)) {}
  std::shared_ptr<const CompiledGrammar> get(const OutputConstraint& c);

 private:
  static constexpr size_t kMaxEntries = 64;
  std::shared_ptr<const TokenTrie> vocab_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CompiledGrammar>> compiled_;
  std::vector<std::string> order_;  // oldest first, for eviction
};

}  // namespace brisk::grammar
