// llama.cpp's GBNF grammar syntax (grammars/README.md there): rules `name ::= ...` with
// "literals", [character classes] (ranges, ^negation, escapes), `.`, groups, alternatives and
// the postfix operators * + ? {m} {m,} {m,n}; # comments. The start rule is `root`.
#pragma once

#include <string_view>

#include "grammar/grammar.hpp"

namespace brisk::grammar {

// Parses GBNF text into rules of b (its rule names as written); errors name line and column.
void parse_gbnf(std::string_view text, GrammarBuilder& b);
Grammar compile_gbnf(std::string_view text);  // parse_gbnf, then build("root")

}  // namespace brisk::grammar
