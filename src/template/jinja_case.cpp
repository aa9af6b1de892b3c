#include "template/jinja_case.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "template/jinja_strings.hpp"
#include "base/utf8.hpp"

namespace brisk::jinja {
namespace {

struct CaseRow {
  uint32_t cp;
  const char* upper;  // nullptr: the code point itself
  const char* lower;
  const char* title;
};

constexpr CaseRow kRows[] = {
#include "template/jinja_case_table.inc"
};

const CaseRow* find_row(uint32_t cp) {
  const auto it = std::lower_bound(std::begin(kRows), std::end(kRows), cp,
                                   [](const CaseRow& r, uint32_t c) { return r.cp < c; });
  return it != std::end(kRows) && it->cp == cp ? it : nullptr;
}

enum class Map { Upper, Lower, Title };

bool is_cased(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  return find_row(cp) != nullptr;
}

// Appends the mapping of code point `cp` (its UTF-8 bytes are `raw`).
void map_into(std::string& out, uint32_t cp, std::string_view raw, Map how) {
  if (cp < 0x80) {
    const char c = char(cp);
    const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
    if (how == Map::Lower && upper) out += char(c + 32);
    else if (how != Map::Lower && lower) out += char(c - 32);
    else out += c;
    return;
  }
  const CaseRow* r = find_row(cp);
  const char* m = !r ? nullptr : how == Map::Upper ? r->upper : how == Map::Lower ? r->lower : r->title;
  if (m) out += m;
  else out.append(raw);
}

// The code points of s, one call of f(cp, raw bytes, index of the next code point) each;
// an invalid byte comes as itself with cp = 0xFFFFFFFF (uncased, unmapped).
template <class F>
void each_code_point(std::string_view s, F f) {
  for (size_t p = 0; p < s.size();) {
    uint32_t cp = 0;
    size_t n = utf8::valid_len(s, p, &cp);
    if (n == 0) n = 1, cp = 0xFFFFFFFF;
    f(cp, s.substr(p, n), p + n);
    p += n;
  }
}

uint32_t code_point_at(std::string_view s, size_t p) {
  uint32_t cp = 0;
  return p < s.size() && utf8::valid_len(s, p, &cp) ? cp : 0xFFFFFFFF;
}

// Python's Final_Sigma: a capital sigma lowercases to 'ς' after a cased letter when no
// cased letter follows.
bool final_sigma(std::string_view s, size_t next, bool after_cased) {
  return after_cased && !is_cased(code_point_at(s, next));
}

// The case-changing scan: `first` maps the first cased character of each word (title) or of
// the string (capitalize), `rest` every other.
std::string convert(std::string_view s, Map first, Map rest, bool per_word) {
  std::string out;
  out.reserve(s.size());
  bool prev_cased = false, seen_first = false;
  each_code_point(s, [&](uint32_t cp, std::string_view raw, size_t next) {
    const bool cased = is_cased(cp);
    const bool at_first = per_word ? !prev_cased : !seen_first;
    const Map how = at_first ? first : rest;
    if (cp == 0x3A3 && how == Map::Lower && final_sigma(s, next, prev_cased)) out += "\xcf\x82";
    else map_into(out, cp, raw, how);
    prev_cased = cased;
    seen_first = true;
  });
  return out;
}

bool case_test(std::string_view s, bool want_lower) {
  bool any_cased = false, wrong = false;
  each_code_point(s, [&](uint32_t cp, std::string_view raw, size_t) {
    if (!is_cased(cp)) return;
    std::string lowered, uppered;
    map_into(lowered, cp, raw, Map::Lower);
    map_into(uppered, cp, raw, Map::Upper);
    const bool is_lower = lowered == raw && uppered != raw, is_upper = uppered == raw && lowered != raw;
    any_cased = true;
    if (want_lower ? !is_lower && is_upper : !is_upper && is_lower) wrong = true;
  });
  return any_cased && !wrong;
}

}  // namespace

std::string unicode_upper(std::string_view s) { return convert(s, Map::Upper, Map::Upper, false); }
std::string unicode_lower(std::string_view s) { return convert(s, Map::Lower, Map::Lower, false); }
std::string unicode_title(std::string_view s) { return convert(s, Map::Title, Map::Lower, true); }
std::string unicode_capitalize(std::string_view s) { return convert(s, Map::Title, Map::Lower, false); }
std::string jinja_title(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool word_start = true;
  each_code_point(s, [&](uint32_t cp, std::string_view raw, size_t next) {
    const bool sep = is_python_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (!word_start && cp == 0x3A3 && final_sigma(s, next, true)) out += "\xcf\x82";
    else map_into(out, cp, raw, word_start ? Map::Upper : Map::Lower);
    word_start = sep;
  });
  return out;
}

bool unicode_is_lower(std::string_view s) { return case_test(s, true); }
bool unicode_is_upper(std::string_view s) { return case_test(s, false); }

}  // namespace brisk::jinja
