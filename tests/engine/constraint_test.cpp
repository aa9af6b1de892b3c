// Structured output through the engine (CPU, the synthetic byte-level BPE model): sampled
// text under a JSON schema, a regex, a GBNF grammar or a choice list always parses when the
// request ends by "stop", several constrained requests run beside unconstrained ones, and a
// bad constraint is refused at submit.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "engine_helpers.hpp"
#include "grammar/constraint.hpp"
#include "grammar/matcher.hpp"

namespace brisk {
namespace {

class ConstraintTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    backend_ = make_cpu_backend(0, true).release();
    model_ = Model::load(test::small_llama_q8(21, "constraint_llama.gguf"), *backend_).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete backend_;
  }
  static inline Backend* backend_ = nullptr;
  static inline Model* model_ = nullptr;
};

OutputConstraint constraint(OutputConstraint::Kind kind, std::string text, std::vector<std::string> choices = {}) {
  OutputConstraint c;
  c.kind = kind;
  c.text = std::move(text);
  c.choices = std::move(choices);
  return c;
}

bool sentence(const OutputConstraint& c, const std::string& text) {
  const grammar::Grammar g = grammar::constraint_grammar(c);
  grammar::Matcher m(g);
  grammar::State s = m.start();
  return m.advance(s, text) && s.accept;
}

TEST_F(ConstraintTest, SampledTextFollowsTheConstraint) {
  using K = OutputConstraint::Kind;
  const std::vector<OutputConstraint> cases = {
      constraint(K::JsonSchema, R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
        "n": {"type": "integer"}, "ok": {"type": "boolean"}}, "required": ["name", "ok"]})"),
      constraint(K::JsonSchema, R"({"type": "array", "items": {"enum": ["a", "b", 1]}, "maxItems": 4})"),
      constraint(K::Regex, "[a-c]{2,5}-[0-9]{1,3}"),
      constraint(K::Gbnf, "root ::= \"(\" [xy]* \")\" | \"none\""),
      constraint(K::Choice, "", {"yes", "no", "maybe not"}),
      constraint(K::JsonObject, ""),
  };
  const std::vector<int32_t> prompt = {5, 17, 42, 9};
  for (size_t i = 0; i < cases.size(); ++i) {
    int stopped = 0;
    for (uint64_t seed : {1u, 2u, 3u}) {
      GenerateOptions g;
      g.max_tokens = 60;
      g.constraint = cases[i];
      g.sampling.temperature = 1.f;
      g.sampling.seed = seed;
      const auto out = test::generate(*model_, prompt, g);
      const std::string text = model_->tokenizer().decode(out.tokens);
      ASSERT_NE(out.result.finish_reason, "error") << out.result.error;
      if (out.result.finish_reason == "stop") {
        ++stopped;
        EXPECT_TRUE(sentence(cases[i], text)) << "case " << i << " seed " << seed << ": " << text;
      } else {  // cut by max_tokens: still a prefix of a sentence
        grammar::Grammar gr = grammar::constraint_grammar(cases[i]);
        grammar::Matcher m(gr);
        grammar::State s = m.start();
        EXPECT_TRUE(m.advance(s, text)) << "case " << i << ": " << text;
      }
    }
    if (i != 5) {
      EXPECT_GT(stopped, 0) << "case " << i << " never finished";
    }
  }
}

// ignore_eos under a grammar that may end after any item: the end of sequence is never
// offered, so every sample runs to max_tokens (without it, some end early by "stop").
TEST_F(ConstraintTest, IgnoreEosRunsAnOpenGrammarToMaxTokens) {
  const OutputConstraint list = constraint(OutputConstraint::Kind::Gbnf, "root ::= \"[\" [0-9]+ (\",\" [0-9]+)*");
  int early_without = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GenerateOptions g;
    g.max_tokens = 24;
    g.constraint = list;
    g.sampling.temperature = 1.f;
    g.sampling.seed = seed;
    early_without += test::generate(*model_, {5, 17, 42, 9}, g).result.finish_reason == "stop";
    g.ignore_eos = true;
    const auto out = test::generate(*model_, {5, 17, 42, 9}, g);
    EXPECT_EQ(out.result.finish_reason, "length") << out.result.error;
    EXPECT_EQ(out.tokens.size(), 24u);
    const grammar::Grammar gr = grammar::constraint_grammar(list);  // cut by max_tokens: a prefix
    grammar::Matcher m(gr);
    grammar::State st = m.start();
    EXPECT_TRUE(m.advance(st, model_->tokenizer().decode(out.tokens)));
  }
  EXPECT_GT(early_without, 0) << "the grammar never ended early: the test shows nothing";
}

TEST_F(ConstraintTest, BadConstraintsAreRefusedAtSubmit) {
  using K = OutputConstraint::Kind;
  EngineOptions o;
  o.parallel = 1;
  o.context = 128;
  EngineCore engine(*model_, o);
  for (const OutputConstraint& c : {constraint(K::JsonSchema, "{not json"), constraint(K::JsonSchema, R"({"type": "number", "minimum": 1})"),
                                    constraint(K::Gbnf, "root ::= undefined"), constraint(K::Regex, "(a"),
                                    constraint(K::Choice, "")}) {
    auto r = std::make_shared<Request>();
    r->prompt = {1, 2, 3};
    r->opts.constraint = c;
    try {
      engine.submit(r);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
}

}  // namespace
}  // namespace brisk
