// Python's str.upper(), lower(), title() and capitalize() over UTF-8, from a table of
// Unicode's case mappings (jinja_case_table.inc, made by tools/make_case_table.py), not the C
// locale: 'é'.upper() is 'É', 'ß'.upper() is 'SS', 'ΟΔΟΣ'.lower() ends in a final sigma.
// Bytes that are not UTF-8 pass through unchanged.
#pragma once

#include <string>
#include <string_view>

namespace brisk::jinja {

std::string unicode_upper(std::string_view s);
std::string unicode_lower(std::string_view s);
std::string unicode_title(std::string_view s);
std::string unicode_capitalize(std::string_view s);
// Jinja2's `title` filter, which is not str.title(): after each run of whitespace, '-', '(',
// '{', '[' or '<' the next character goes to upper case (not title case), the rest to lower.
std::string jinja_title(std::string_view s);
// Python's str.islower()/isupper(): some cased character, and none of the other case.
bool unicode_is_lower(std::string_view s);
bool unicode_is_upper(std::string_view s);

}  // namespace brisk::jinja
