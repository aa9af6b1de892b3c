#include "grammar/constraint.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "grammar/gbnf.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/regex.hpp"

namespace brisk::grammar {

Grammar constraint_grammar(const OutputConstraint& c) {
  using Kind = OutputConstraint::Kind;
  switch (c.kind) {
    case Kind::JsonSchema: {
      nlohmann::ordered_json schema;
      try {
        schema = nlohmann::ordered_json::parse(c.text);
      } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorCode::kInvalidArgument, std::string("the JSON schema is not valid JSON: ") + e.what());
      }
      return compile_json_schema(schema, JsonSchemaOptions{c.strict, c.before, c.after, c.between, c.max_count});
    }
    case Kind::JsonObject: return compile_json_object();
    case Kind::Gbnf: return compile_gbnf(c.text);
    case Kind::Regex: return compile_regex(c.text);
    case Kind::Choice: {
      if (c.choices.empty()) throw Error(ErrorCode::kInvalidArgument, "the list of choices is empty");
      GrammarBuilder b;
      const uint32_t root = b.rule("root");
      for (const std::string& s : c.choices) b.add_alternative(root, b.literal(s));
      return b.build("root");
    }
    case Kind::None: break;
  }
  throw Error(ErrorCode::kInternal, "no constraint to compile");
}

TokenConstraint::TokenConstraint(std::shared_ptr<const CompiledGrammar> g, std::vector<int32_t> end_ids)
    : g_(std::move(g)), matcher_(g_->grammar()), state_(matcher_.start()), end_ids_(std::move(end_ids)) {}

void TokenConstraint::mask(uint64_t* bits) {
  g_->mask(matcher_, state_, bits);
  // An end-of-sequence token is the end, wherever its text would fit (a vocabulary may keep
  // one as plain text, "<|endoftext|>" inside a string): allowed exactly where the grammar ends.
  for (int32_t id : end_ids_) {
    if (id < 0 || size_t(id) >= g_->words() * 64) continue;
    const uint64_t bit = uint64_t(1) << (id & 63);
    bits[size_t(id) >> 6] = state_.accept ? bits[size_t(id) >> 6] | bit : bits[size_t(id) >> 6] & ~bit;
  }
}

bool TokenConstraint::accept(int32_t id) {
  if (std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end()) return state_.accept;
  if (id < 0 || size_t(id) >= g_->vocab().vocab_size()) return false;
  const std::string& bytes = g_->vocab().bytes(id);
  if (bytes.empty()) return false;
  State next = state_;
  if (!matcher_.advance(next, bytes)) return false;
  state_ = std::move(next);
  return true;
}

std::shared_ptr<const CompiledGrammar> ConstraintCache::get(const OutputConstraint& c) {
  // Every field length-prefixed, so that no two constraints share a key.
  std::string key = std::to_string(int(c.kind)) + (c.strict ? "s" : "l") + std::to_string(c.max_count);
  auto field = [&key](const std::string& f) { key += ":" + std::to_string(f.size()) + ":" + f; };
  for (const std::string* f : {&c.text, &c.before, &c.after, &c.between}) field(*f);
  for (const std::string& s : c.choices) field(s);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = compiled_.find(key);
    if (it != compiled_.end()) return it->second;
  }
  auto g = std::make_shared<const CompiledGrammar>(constraint_grammar(c), vocab_);  // outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (compiled_.emplace(key, g).second) order_.push_back(key);
  if (order_.size() > kMaxEntries) {
    compiled_.erase(order_.front());
    order_.erase(order_.begin());
  }
  return g;
}

}  // namespace brisk::grammar
