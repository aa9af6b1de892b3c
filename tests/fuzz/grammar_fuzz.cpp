// Grammars from requests: the input's first byte picks the front end (GBNF, JSON Schema,
// regex), the rest of its first part is the grammar text; a grammar that compiles is then
// compiled against a small vocabulary and walked, each step's token picked by the second
// part's bytes among those its mask allows, which must all advance the matcher. Errors are
// brisk::Errors; nothing may crash, hang or grow without bound.
#include <string>
#include <vector>

#include "base/error.hpp"
#include "fuzz_input.hpp"
#include "grammar/gbnf.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/regex.hpp"
#include "grammar/token_mask.hpp"

using namespace brisk;
using namespace brisk::grammar;

namespace {

std::shared_ptr<const TokenTrie> vocab() {
  static const auto v = [] {
    std::vector<std::string> t;
    for (int b = 0; b < 256; ++b) t.push_back(std::string(1, char(b)));
    for (const char* s : {"{\"", "\":", "\", \"", "true", "null", "ab", "abc", " {", "}\n", "12", "é", "\xe2\x82", "[1,"})
      t.push_back(s);
    return std::make_shared<const TokenTrie>(t);
  }();
  return v;
}

Grammar compile(const std::string& text) {
  if (text.empty()) throw Error(ErrorCode::kInvalidArgument, "empty");
  const std::string body = text.substr(1);
  switch (uint8_t(text[0]) % 3) {
    case 0: return compile_gbnf(body);
    case 1: {
      nlohmann::ordered_json j;
      try {
        j = nlohmann::ordered_json::parse(body);
      } catch (const nlohmann::json::exception&) {
        throw Error(ErrorCode::kInvalidArgument, "not JSON");
      }
      return compile_json_schema(j);
    }
    default: return compile_regex(body);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const auto parts = fuzz::split_parts(data, size, 2);
  std::unique_ptr<CompiledGrammar> cg;
  try {
    Grammar g = compile(parts[0]);
    if (g.slots.size() > 4000) return 0;  // (masks over bigger ones take long; the limits are tested)
    cg = std::make_unique<CompiledGrammar>(std::move(g), vocab());
  } catch (const Error&) {
    return 0;
  }
  Matcher m(cg->grammar());
  State s = m.start();
  std::vector<uint64_t> bits(cg->words());
  for (unsigned char pick : parts[1]) {
    cg->mask(m, s, bits.data());
    std::vector<int32_t> allowed;
    for (size_t i = 0; i < vocab()->vocab_size(); ++i)
      if ((bits[i >> 6] >> (i & 63)) & 1) allowed.push_back(int32_t(i));
    if (allowed.empty()) break;
    const int32_t id = allowed[pick % allowed.size()];
    if (!m.advance(s, vocab()->bytes(id))) __builtin_trap();  // the mask allowed a token the matcher refuses
  }
  return 0;
}
