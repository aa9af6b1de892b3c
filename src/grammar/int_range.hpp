// The decimal integers of a range as patterns of digit classes, for JSON Schema's minimum
// and maximum on integers: each pattern is one alternative, a list of byte ranges to match
// in order ('-' as the range '-'..'-'), so that [lo, hi] is their union and no number is
// written with a leading zero or as -0. The classic split by digit count and common prefix.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace brisk::grammar {

using DigitPattern = std::vector<std::pair<char, char>>;

// The largest magnitude the JSON lexicon writes (16 digits); lo and hi are clamped to it.
inline constexpr int64_t kMaxJsonInteger = 9999999999999999;

// Patterns for the integers in [lo, hi] (none when lo > hi).
std::vector<DigitPattern> integer_range_patterns(int64_t lo, int64_t hi);

}  // namespace brisk::grammar
