// Regular expressions (the ECMAScript subset JSON Schema's `pattern` and vLLM's guided_regex
// use) as grammar rules: literals and escapes, classes with ranges and \d \w \s (and their
// negations), `.`, groups (capturing, (?:...)), alternation, * + ? {m} {m,} {m,n} (lazy or
// not: the language is the same), ^ and $ at the ends. Backreferences and lookaround are
// refused by name. The whole text must match (anchored).
#pragma once

#include <string_view>

#include "grammar/grammar.hpp"

namespace brisk::grammar {

// How matched characters are written: as they are, or escaped for the inside of a JSON string
// (a pattern constrains a string's value; the grammar produces its JSON form).
enum class RegexOutput { Raw, JsonString };

// A rule of b that matches the regex; errors name the position and the unsupported feature.
uint32_t regex_rule(std::string_view pattern, GrammarBuilder& b, RegexOutput out = RegexOutput::Raw);
Grammar compile_regex(std::string_view pattern);

}  // namespace brisk::grammar
