// Python's str operations the interpreter's methods and filters share (jinja_strings.cpp).
// Each charges the bytes it scans and builds to the budget; none is worse than linear.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "template/jinja_value.hpp"

namespace brisk::jinja {

// str.isspace() for one code point: ASCII whitespace, \x1c-\x1f, U+0085, U+00A0 and
// Unicode's spaces.
bool is_python_space(uint32_t cp);
size_t code_points(std::string_view s);
// The bytes of the code point at s[p] (1 for a byte that starts none), and the code point
// (0xFFFFFFFF for such a byte).
size_t utf8_len_at(std::string_view s, size_t p, uint32_t* cp = nullptr);

// str.strip/lstrip/rstrip(chars): chars undefined or none strips whitespace.
std::string py_strip(std::string_view s, const Value& chars, bool left, bool right);
// str.split(sep, maxsplit) and str.rsplit (from_right); sep none splits on whitespace runs.
Array py_split(std::string_view s, const Value& sep, int64_t maxsplit, bool from_right, Budget& budget);
Array py_splitlines(std::string_view s, bool keepends, Budget& budget);
// str.replace(from, to, count): one pass, the result's size checked before it is built.
std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count,
                       Budget& budget);
// str.center(width, fill).
std::string py_center(std::string_view s, int64_t width, const std::string& fill, Budget& budget);
// sep.join(items), each item through str() (or `pick(item, attribute)` when attribute is
// defined: Jinja2's join(attribute=...)).
std::string py_join(const Value& items, const std::string& sep, const Value& attribute, Budget& budget,
                    Value (*pick)(const Value&, const Value&, Budget&));

}  // namespace brisk::jinja
