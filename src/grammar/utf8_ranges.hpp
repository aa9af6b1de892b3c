// Code-point ranges as UTF-8 byte patterns: [lo, hi] becomes a few sequences of byte ranges
// (each sequence one UTF-8 length), so character classes of any front end run on the
// byte-level matcher. The classic split of RE2 and Rust's utf8-ranges.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brisk::grammar {

using ByteRange = std::pair<uint8_t, uint8_t>;
using Utf8Sequence = std::vector<ByteRange>;

// The UTF-8 patterns of code points lo..hi (surrogates excluded).
std::vector<Utf8Sequence> utf8_sequences(uint32_t lo, uint32_t hi);
// A set of code-point ranges (any order, overlapping allowed), complemented over all of
// Unicode when negate.
std::vector<std::pair<uint32_t, uint32_t>> normalize_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                            bool negate);
std::string utf8_encode(uint32_t cp);
// The code point at t[pos] (pos moves past it); false for invalid UTF-8.
bool utf8_decode(std::string_view t, size_t& pos, uint32_t& cp);
// `digits` hex digits at t[pos] (pos moves past them); false where one is not a hex digit.
bool parse_hex(std::string_view t, size_t& pos, int digits, uint32_t& value);

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

}  // namespace brisk::grammar
