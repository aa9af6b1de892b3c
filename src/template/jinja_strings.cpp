// Python's str methods over UTF-8 (positions and lengths count code points, whitespace is
// Unicode's), each in one pass over its input, charging the bytes it scans and builds: a
// template that puts a request's content through `replace` or `split` costs time linear in
// that content.
#include <algorithm>

#include "template/jinja_builtins.hpp"
#include "template/jinja_case.hpp"
#include "template/jinja_strings.hpp"
#include "base/utf8.hpp"

namespace brisk::jinja {
namespace {

using builtin::arg;
using builtin::as_int;

uint32_t cp_at(std::string_view s, size_t p, size_t* len) {
  uint32_t cp = 0;
  *len = utf8::valid_len(s, p, &cp);
  if (*len == 0) *len = 1, cp = 0xFFFFFFFF;
  return cp;
}

// The length of the code point that ends at s[end - 1].
size_t cp_before(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t n = 0;
  cp_at(s, start, &n);
  return start + n == end ? end - start : 1;
}

bool space_at(std::string_view s, size_t p, size_t* len) { return is_python_space(cp_at(s, p, len)); }
bool space_before(std::string_view s, size_t end, size_t* len) {
  *len = cp_before(s, end);
  size_t n = 0;
  return is_python_space(cp_at(s, end - *len, &n));
}

// Python str.split(None, maxsplit) from the left, or rsplit from the right.
Array split_whitespace(std::string_view s, int64_t maxsplit, bool from_right) {
  Array out;
  size_t a = 0, b = s.size(), n = 0;
  if (!from_right) {
    while (true) {
      while (a < b && space_at(s, a, &n)) a += n;
      if (a >= b) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {  // the rest, trailing spaces and all
        out.push_back(Value::string(std::string(s.substr(a, b - a))));
        break;
      }
      size_t j = a;
      while (j < b && !space_at(s, j, &n)) j += n;
      out.push_back(Value::string(std::string(s.substr(a, j - a))));
      a = j;
    }
    return out;
  }
  while (true) {
    while (b > a && space_before(s, b, &n)) b -= n;
    if (b <= a) break;
    if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
      out.push_back(Value::string(std::string(s.substr(a, b - a))));
      break;
    }
    size_t j = b;
    while (j > a && !space_before(s, j, &n)) j -= n;
    out.push_back(Value::string(std::string(s.substr(j, b - j))));
    b = j;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

Array split_on(std::string_view s, std::string_view sep, int64_t maxsplit, bool from_right) {
  Array out;
  if (!from_right) {
    size_t i = 0;
    for (;;) {
      const size_t j = s.find(sep, i);
      if (j == std::string::npos || (maxsplit >= 0 && int64_t(out.size()) == maxsplit)) {
        out.push_back(Value::string(std::string(s.substr(i))));
        return out;
      }
      out.push_back(Value::string(std::string(s.substr(i, j - i))));
      i = j + sep.size();
    }
  }
  size_t end = s.size();
  for (;;) {
    const size_t j = end >= sep.size() ? s.rfind(sep, end - sep.size()) : std::string::npos;
    if (j == std::string::npos || (maxsplit >= 0 && int64_t(out.size()) == maxsplit)) {
      out.push_back(Value::string(std::string(s.substr(0, end))));
      break;
    }
    out.push_back(Value::string(std::string(s.substr(j + sep.size(), end - j - sep.size()))));
    end = j;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// Python's line boundaries: \n \r \r\n \v \f \x1c \x1d \x1e \x85 U+2028 U+2029.
bool line_break(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 ||
         cp == 0x2028 || cp == 0x2029;
}

}  // namespace

size_t utf8_len_at(std::string_view s, size_t p, uint32_t* cp) {
  size_t n = 0;
  const uint32_t c = cp_at(s, p, &n);
  if (cp) *cp = c;
  return n;
}

bool is_python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

std::string py_strip(std::string_view s, const Value& chars, bool left, bool right) {
  const bool custom = chars.is_string();
  auto strippable = [&](size_t p, size_t len) {
    if (!custom) {
      size_t n = 0;
      return is_python_space(cp_at(s, p, &n));
    }
    // Python strips code points, not bytes: the code point must appear whole in chars.
    const std::string_view c = s.substr(p, len);
    for (size_t q = chars.str().find(c); q != std::string::npos; q = chars.str().find(c, q + 1)) {
      size_t n = 0;
      cp_at(chars.str(), q, &n);
      if (n == len) return true;
    }
    return false;
  };
  size_t a = 0, b = s.size(), n = 0;
  if (left)
    while (a < b && (cp_at(s, a, &n), strippable(a, n))) a += n;
  if (right)
    while (b > a && (n = cp_before(s, b), strippable(b - n, n))) b -= n;
  return std::string(s.substr(a, b - a));
}

Array py_split(std::string_view s, const Value& sep, int64_t maxsplit, bool from_right, Budget& budget) {
  budget.work(s.size(), "split");
  if (!sep.is_string()) {
    if (sep.defined() && sep.kind != Value::Kind::None) budget.fail(ErrorCode::kInvalidArgument, "split() needs a string separator");
    return split_whitespace(s, maxsplit, from_right);
  }
  if (sep.str().empty()) budget.fail(ErrorCode::kInvalidArgument, "split() with an empty separator");
  return split_on(s, sep.str(), maxsplit, from_right);
}

Array py_splitlines(std::string_view s, bool keepends, Budget& budget) {
  budget.work(s.size(), "splitlines");
  Array out;
  size_t start = 0, p = 0, n = 0;
  while (p < s.size()) {
    const uint32_t cp = cp_at(s, p, &n);
    if (!line_break(cp)) {
      p += n;
      continue;
    }
    size_t eol = p + n;
    if (cp == '\r' && eol < s.size() && s[eol] == '\n') ++eol;
    out.push_back(Value::string(std::string(s.substr(start, (keepends ? eol : p) - start))));
    start = p = eol;
  }
  if (start < s.size()) out.push_back(Value::string(std::string(s.substr(start))));
  return out;
}

std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count,
                       Budget& budget) {
  budget.work(s.size(), "replace");
  // Where each replacement goes (Python: an empty `from` matches before every code point and
  // at the end), then the result's size is known before it is built.
  std::vector<size_t> at;
  if (from.empty()) {
    size_t p = 0, n = 0;
    for (; p < s.size() && (count < 0 || int64_t(at.size()) < count); p += n) at.push_back(p), cp_at(s, p, &n);
    if (p >= s.size() && (count < 0 || int64_t(at.size()) < count)) at.push_back(s.size());
  } else {
    for (size_t p = s.find(from); p != std::string::npos && (count < 0 || int64_t(at.size()) < count);
         p = s.find(from, p + from.size()))
      at.push_back(p);
  }
  const size_t size = s.size() - at.size() * from.size() + at.size() * to.size();
  budget.build_string(size, "replace");
  std::string out;
  out.reserve(size);
  size_t done = 0;
  for (size_t p : at) {
    out.append(s.substr(done, p - done));
    out.append(to);
    done = p + from.size();
  }
  out.append(s.substr(done));
  return out;
}

std::string py_center(std::string_view s, int64_t width, const std::string& fill, Budget& budget) {
  const int64_t len = int64_t(code_points(s));
  if (width <= len) return std::string(s);
  const int64_t margin = width - len;
  budget.check_string(size_t(margin), "center");  // first, so that the product below cannot wrap
  budget.build_string(s.size() + size_t(margin) * fill.size(), "center");
  const int64_t left = margin / 2 + (margin & width & 1);  // CPython's rounding
  std::string out;
  for (int64_t k = 0; k < left; ++k) out += fill;
  out.append(s);
  for (int64_t k = left; k < margin; ++k) out += fill;
  return out;
}

size_t code_points(std::string_view s) {
  size_t count = 0, n = 0;
  for (size_t p = 0; p < s.size(); p += n, ++count) cp_at(s, p, &n);
  return count;
}

std::string py_join(const Value& items, const std::string& sep, const Value& attribute, Budget& budget,
                    Value (*pick)(const Value&, const Value&, Budget&)) {
  std::string out;
  bool first = true;
  for (const auto& x : items.items()) {
    const std::string piece = to_str(attribute.defined() ? pick(x, attribute, budget) : x, &budget);
    budget.check_string(out.size() + sep.size() + piece.size(), "join");
    budget.work(sep.size() + piece.size(), "join");
    if (!first) out += sep;
    out += piece;
    first = false;
  }
  return out;
}

}  // namespace brisk::jinja
