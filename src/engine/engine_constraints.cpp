// Structured output in the engine: a constrained request's grammar is compiled in the thread
// that submits it (errors reach the caller as a bad request), once per distinct constraint
// (grammar::ConstraintCache over the model's vocabulary as bytes); each step then masks the
// sequence's row to the tokens that can continue its text.
#include <mutex>

#include "base/error.hpp"
#include "engine/engine_core.hpp"

namespace brisk {

void EngineCore::attach_constraint(Sequence& s) {
  if (!model_.has_tokenizer())
    throw Error(ErrorCode::kInvalidArgument, "structured output needs the model's tokenizer", "response_format");
  const Tokenizer& tok = model_.tokenizer();
  std::call_once(vocab_once_, [&] {
    std::vector<std::string> bytes(size_t(tok.vocab_size()));
    for (int32_t id = 0; id < tok.vocab_size(); ++id)
      if (!tok.is_special(id)) bytes[size_t(id)] = tok.token_bytes(id);
    constraints_ = std::make_unique<grammar::ConstraintCache>(std::make_shared<grammar::TokenTrie>(bytes));
  });
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
  try {
    compiled = constraints_->get(s.req->opts.constraint);
  } catch (const Error& e) {  // a bad schema, grammar or regex: the request's fault
    throw Error(e.code(), e.what(), "response_format");
  }
  // ignore_eos: the end of sequence is never offered, so the text runs on to max_tokens unless
  // the grammar lets nothing follow (a benchmark's endless grammar decodes every step).
  const std::vector<int32_t> eos = s.req->opts.ignore_eos ? std::vector<int32_t>{} : tok.eos_ids();
  s.constraint = std::make_unique<grammar::TokenConstraint>(std::move(compiled), eos);
}

// Appends the mask of the sequence's next token (the vocabulary's words; ids past the
// tokenizer's, as a padded embedding has, never allowed) for batch row `row`.
void EngineCore::add_mask(Sequence& s, int32_t row, std::vector<uint64_t>& bits, std::vector<int32_t>& rows) const {
  if (!s.constraint) return;
  const size_t words = (size_t(vocab_) + 63) / 64, at = bits.size();
  bits.resize(at + words, 0);
  if (s.constraint->words() > words) throw Error(ErrorCode::kInternal, "a grammar over a larger vocabulary than the model's");
  s.constraint->mask(bits.data() + at);
  rows.push_back(row);
}

}  // namespace brisk
