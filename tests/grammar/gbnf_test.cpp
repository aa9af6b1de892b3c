// GBNF grammars compiled to the byte-level matcher: what they accept and refuse, including
// UTF-8 classes split across bytes, repetition bounds and errors that name the problem.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "grammar/gbnf.hpp"
#include "grammar/json_gbnf.hpp"
#include "grammar/matcher.hpp"

namespace brisk::grammar {
namespace {

// Whether the whole of text is a sentence of the grammar.
bool matches(const Grammar& g, const std::string& text) {
  Matcher m(g);
  State s = m.start();
  return m.advance(s, text) && s.accept;
}

// Whether text can be continued into a sentence (every byte allowed so far).
bool prefix_ok(const Grammar& g, const std::string& text) {
  Matcher m(g);
  State s = m.start();
  return m.advance(s, text) && !s.dead();
}

std::string error_of(const std::string& text) {
  try {
    compile_gbnf(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << text;
    return e.what();
  }
  return "";
}

TEST(Gbnf, AlternativesAndLiterals) {
  const Grammar g = compile_gbnf(R"(root ::= "yes" | "no" | "maybe")");
  EXPECT_TRUE(matches(g, "yes"));
  EXPECT_TRUE(matches(g, "maybe"));
  EXPECT_FALSE(matches(g, "ye"));
  EXPECT_TRUE(prefix_ok(g, "ye"));
  EXPECT_FALSE(prefix_ok(g, "yo"));
  EXPECT_FALSE(matches(g, "yess"));
}

TEST(Gbnf, RepetitionAndGroups) {
  const Grammar g = compile_gbnf(R"(
# a list of words
root ::= word ("," ws word)*
word ::= [a-z]+
ws   ::= " "?
)");
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_TRUE(matches(g, "ab,cd, ef"));
  EXPECT_FALSE(matches(g, "ab,"));
  EXPECT_FALSE(matches(g, ",ab"));
  EXPECT_FALSE(matches(g, "ab,  cd"));
  EXPECT_FALSE(matches(g, ""));
}

TEST(Gbnf, BoundedRepetition) {
  const Grammar g = compile_gbnf(R"(root ::= "a"{2,3} "b"{2} [0-9]{1,} "c"{0,1})");
  EXPECT_FALSE(matches(g, "abb1"));
  EXPECT_TRUE(matches(g, "aabb1"));
  EXPECT_TRUE(matches(g, "aaabb123c"));
  EXPECT_FALSE(matches(g, "aaaabb1"));
  EXPECT_FALSE(matches(g, "aabbb1"));
  EXPECT_FALSE(matches(g, "aabb1cc"));
  const Grammar h = compile_gbnf(R"(root ::= ("ab" | "c"){3})");
  EXPECT_TRUE(matches(h, "abcab"));
  EXPECT_FALSE(matches(h, "abc"));
}

TEST(Gbnf, Utf8ClassesByteByByte) {
  const Grammar g = compile_gbnf(R"(root ::= [α-ω]+ [^a-z\n] .)");
  EXPECT_TRUE(matches(g, "αβγ!€"));
  EXPECT_TRUE(matches(g, "ω😀😀"));
  EXPECT_FALSE(matches(g, "αa!"));
  EXPECT_FALSE(matches(g, "a!!"));
  // The first byte of a two-byte character is a fine prefix; a wrong second byte is not.
  const std::string alpha = "α";
  EXPECT_TRUE(prefix_ok(g, alpha.substr(0, 1)));
  EXPECT_FALSE(prefix_ok(g, alpha.substr(0, 1) + "a"));
  EXPECT_FALSE(matches(g, "αβ\n!"));
}

TEST(Gbnf, EscapesAndNegation) {
  const Grammar g = compile_gbnf(R"(root ::= "\"" ( [^"\\] | "\\" ["\\nt] )* "\"" "\x41\u00e9\t")");
  EXPECT_TRUE(matches(g, "\"ab\\\"c\\n\"Aé\t"));
  EXPECT_FALSE(matches(g, "\"a\"b\"Aé\t"));
  EXPECT_FALSE(matches(g, "\"a\\x\"Aé\t"));
}

TEST(Gbnf, NullableAndNestedRules) {
  const Grammar g = compile_gbnf(R"(
root ::= a b "z"
a ::= "x"* | ("y" a)
b ::= (a | "w")?
)");
  EXPECT_TRUE(matches(g, "z"));
  EXPECT_TRUE(matches(g, "yyxxwz"));
  EXPECT_TRUE(matches(g, "xxyxz"));
  EXPECT_FALSE(matches(g, "wwz"));
}

TEST(Gbnf, ErrorsNameTheProblem) {
  EXPECT_NE(error_of("root ::= foo").find("'foo'"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= a\na ::= b? a \"x\"\nb ::= \"c\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("root = \"a\"").find("::="), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("escape"), std::string::npos);
  EXPECT_NE(error_of("root ::= [z-a]").find("backwards"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("range"), std::string::npos);
  EXPECT_NE(error_of("x ::= \"a\"").find("'root'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"").find("twice"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\n  | \"b\"").find("line 2"), std::string::npos);
}

// The JSON grammar: real documents pass, broken ones stop at the first byte that cannot
// continue.
TEST(Gbnf, JsonGrammar) {
  const Grammar g = compile_gbnf(kJson);
  EXPECT_TRUE(matches(g, R"({"a": [1, 2.5, -3e4, true, null], "b": {"c": "d\u00e9\n"}})"));
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_TRUE(matches(g, "{\"é😀\": \"\"}"));
  EXPECT_FALSE(matches(g, R"({"a": })"));
  EXPECT_FALSE(prefix_ok(g, R"({"a": 01)"));
  EXPECT_FALSE(prefix_ok(g, R"({"a" 1)"));
  EXPECT_TRUE(prefix_ok(g, R"({"a": [1, {"b)"));
}

}  // namespace
}  // namespace brisk::grammar
