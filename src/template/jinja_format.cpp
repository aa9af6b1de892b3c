// Python's two string formatting languages as templates use them: `fmt % args` (printf-style:
// flags - + space # 0, width, precision, * and the conversions s r a d i u x X o c e E f F g G
// %) and `fmt.format(...)` (fields {} {0} {name} with .attr/[key], !s !r, and the format
// spec [[fill]align][sign][#][0][width][,_][.precision][type]). Widths and precisions are
// checked against the budget before any text is built.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "template/jinja_builtins.hpp"
#include "template/jinja_ints.hpp"
#include "template/jinja_strings.hpp"
#include "base/utf8.hpp"

namespace brisk::jinja {
namespace {

struct Spec {
  char fill = ' ';
  char align = 0;  // < > ^ =, 0: the type's default
  char sign = '-';
  bool alt = false, zero = false;
  char group = 0;  // , or _
  int64_t width = 0, precision = -1;
  char type = 0;
};

[[noreturn]] void bad(const Budget& b, const std::string& what) { b.fail(ErrorCode::kInvalidArgument, what); }

std::string digits_in_base(Int128 x, int base, bool upper_hex) {
  if (x == 0) return "0";
  const char* d = upper_hex ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (; x > 0; x /= base) out += d[int(x % base)];
  return {out.rbegin(), out.rend()};
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  const size_t n = digits.size();
  for (size_t k = 0; k < n; ++k) {
    if (k && (n - k) % 3 == 0) out += sep;
    out += digits[k];
  }
  return out;
}

// Pads `body` (whose sign and prefix come first) to the spec's width.
std::string pad(const std::string& sign, const std::string& body, const Spec& s, char default_align, Budget& b) {
  const int64_t len = int64_t(code_points(sign) + code_points(body));
  if (s.width <= len) return sign + body;
  b.build_string(sign.size() + body.size() + size_t(s.width - len), "format");
  const size_t fill = size_t(s.width - len);
  const char align = s.align ? s.align : default_align;
  if (align == '=') return sign + std::string(fill, s.fill) + body;
  if (align == '<') return sign + body + std::string(fill, s.fill);
  if (align == '^') return std::string(fill / 2, s.fill) + sign + body + std::string(fill - fill / 2, s.fill);
  return std::string(fill, s.fill) + sign + body;
}

std::string sign_of(bool negative, const Spec& s) {
  return negative ? "-" : s.sign == '+' ? "+" : s.sign == ' ' ? " " : "";
}

std::string format_int(Int128 x, Spec s, Budget& b) {
  const char t = s.type ? s.type : 'd';
  const bool neg = x < 0;
  const Int128 mag = neg ? -x : x;
  std::string digits, prefix;
  if (t == 'x' || t == 'X') digits = digits_in_base(mag, 16, t == 'X'), prefix = s.alt ? (t == 'X' ? "0X" : "0x") : "";
  else if (t == 'o') digits = digits_in_base(mag, 8, false), prefix = s.alt ? "0o" : "";
  else if (t == 'b') digits = digits_in_base(mag, 2, false), prefix = s.alt ? "0b" : "";
  else if (t == 'c') return pad("", [&] { std::string c; utf8::append(c, uint32_t(x)); return c; }(), s, '<', b);
  else digits = int_to_string(mag);
  if (s.precision > int64_t(digits.size())) {  // printf's minimum digit count
    b.check_string(size_t(s.precision), "format");
    digits.insert(0, size_t(s.precision) - digits.size(), '0');
  }
  if (s.group) digits = group_digits(digits, s.group);
  if (s.zero && !s.align) s.fill = '0', s.align = '=';
  return pad(sign_of(neg, s), prefix + digits, s, '>', b);
}

std::string format_float(double x, Spec s, Budget& b) {
  char t = s.type;
  std::string body;
  if (!t && s.precision < 0) {
    body = float_repr(std::fabs(x));
  } else {
    const int64_t prec = s.precision < 0 ? 6 : s.precision;
    b.check_string(size_t(prec) + 32, "format");
    const bool percent = t == '%';
    const char c = !t ? 'g' : percent ? 'f' : t;
    const std::string cfmt = std::string(s.alt ? "%#.*" : "%.*") + c;
    const double v = std::fabs(percent ? x * 100 : x);
    const int n = std::snprintf(nullptr, 0, cfmt.c_str(), int(prec), v);
    b.check_string(size_t(n), "format");
    body.resize(size_t(n) + 1);
    std::snprintf(body.data(), body.size(), cfmt.c_str(), int(prec), v);
    body.pop_back();
    if (percent) body += '%';
    if (!t && body.find_first_of(".einf") == std::string::npos) body += ".0";  // no type: like repr
  }
  if (s.group) {
    const size_t int_end = std::min(body.find_first_not_of("0123456789"), body.size());
    body = group_digits(body.substr(0, int_end), s.group) + body.substr(int_end);
  }
  if (s.zero && !s.align) s.fill = '0', s.align = '=';
  return pad(sign_of(std::signbit(x) && !std::isnan(x), s), body, s, '>', b);
}

std::string format_value(const Value& v, const Spec& s, Budget& b) {
  const char t = s.type;
  const bool int_type = t == 'd' || t == 'x' || t == 'X' || t == 'o' || t == 'b' || t == 'c' || t == 'n';
  if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) {
    if (!t && v.kind == Value::Kind::Bool && !s.width) return to_str(v);
    if (!t || int_type) return format_int(int_value(v), s, b);
    return format_float(double(int_value(v)), s, b);
  }
  if (v.kind == Value::Kind::Float) {
    if (int_type) bad(b, std::string("unknown format code '") + t + "' for a float");
    return format_float(v.f, s, b);
  }
  if (t && t != 's') bad(b, std::string("unknown format code '") + t + "' for a " + kind_name(v.kind));
  std::string text = to_str(v, &b);
  if (s.precision >= 0 && size_t(s.precision) < code_points(text)) {  // keeps the first code points
    size_t p = 0;
    for (int64_t k = 0; k < s.precision; ++k) p += std::max<size_t>(1, utf8::valid_len(text, p));
    text.resize(p);
  }
  return pad("", text, s, '<', b);
}

int64_t read_number(const std::string& f, size_t& i, const Budget& b) {
  int64_t n = 0;
  for (; i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])); ++i) {
    n = n * 10 + (f[i] - '0');
    if (n > int64_t(b.limits().max_string_bytes)) b.check_string(size_t(n), "format");
  }
  return n;
}

// The spec language of str.format, whole.
Spec parse_format_spec(const std::string& f, const Budget& b) {
  Spec s;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  size_t n = 0;
  if (!f.empty() && (n = std::max<size_t>(1, utf8::valid_len(f, 0))) == 1 && f.size() > 1 && is_align(f[1]))
    s.fill = f[0], s.align = f[1], i = 2;
  else if (!f.empty() && is_align(f[0])) s.align = f[0], i = 1;
  if (i < f.size() && (f[i] == '+' || f[i] == '-' || f[i] == ' ')) s.sign = f[i++];
  if (i < f.size() && f[i] == '#') s.alt = true, ++i;
  if (i < f.size() && f[i] == '0') s.zero = true, ++i;
  s.width = read_number(f, i, b);
  if (i < f.size() && (f[i] == ',' || f[i] == '_')) s.group = f[i++];
  if (i < f.size() && f[i] == '.') {
    ++i;
    s.precision = read_number(f, i, b);
  }
  if (i < f.size()) s.type = f[i++];
  if (i != f.size()) bad(b, "invalid format specifier '" + f + "'");
  return s;
}

}  // namespace

namespace {

// The flags, width and precision of one % conversion, from fmt[i] on (i ends at the type);
// `take` gives the next argument, for a `*`.
template <class Take>
Spec percent_spec(const std::string& fmt, size_t& i, Take&& take, Budget& budget) {
  Spec s;
  s.align = '>';
  for (; i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos; ++i) {
    if (fmt[i] == '-') s.align = '<';
    else if (fmt[i] == '+' || (fmt[i] == ' ' && s.sign != '+')) s.sign = fmt[i];
    else if (fmt[i] == '#') s.alt = true;
    else s.zero = true;
  }
  if (i < fmt.size() && fmt[i] == '*') ++i, s.width = builtin::as_int(take(), 0);
  else s.width = read_number(fmt, i, budget);
  if (s.width < 0) s.align = '<', s.width = s.width == INT64_MIN ? INT64_MAX : -s.width;
  if (i < fmt.size() && fmt[i] == '.') {
    ++i;
    if (i < fmt.size() && fmt[i] == '*') ++i, s.precision = std::max<int64_t>(0, builtin::as_int(take(), 0));
    else s.precision = read_number(fmt, i, budget);
  }
  return s;
}

// One % conversion of value v: s r a, d i u x X o c, e E f F g G.
std::string percent_conversion(char c, const Value& v, Spec s, Budget& budget) {
  if (s.zero && s.align == '>') s.fill = '0', s.align = '=';
  if (c == 's' || c == 'r' || c == 'a') {
    Spec text = s;
    text.fill = ' ';
    if (text.align == '=') text.align = '>';
    return format_value(Value::string(c == 's' ? to_str(v, &budget) : to_repr(v, &budget)), text, budget);
  }
  if (c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o' || c == 'c') {
    if (c == 'c' && v.is_string()) return pad("", v.str(), s, '>', budget);
    const bool whole = c == 'd' || c == 'i' || c == 'u' ? v.is_number() : v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool;
    if (!whole) bad(budget, std::string("%") + c + " format: an integer is required, not " + kind_name(v.kind));
    s.type = c == 'i' || c == 'u' ? 'd' : c;
    return format_int(v.kind == Value::Kind::Float ? float_to_int(v.f, "%d", &budget) : int_value(v), s, budget);
  }
  if (std::string("eEfFgG").find(c) != std::string::npos) {
    if (!v.is_number()) bad(budget, std::string("%") + c + " format: a real number is required, not " + kind_name(v.kind));
    s.type = c;
    if (s.precision < 0) s.precision = 6;
    return format_float(v.as_double(), s, budget);
  }
  bad(budget, std::string("unsupported format character '") + c + "'");
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args, Budget& budget) {
  budget.work(fmt.size(), "%");
  const bool tuple = args.kind == Value::Kind::Array && args.is_tuple;
  const Array& list = tuple ? *args.arr : Array{};
  size_t next = 0;
  auto take = [&]() -> const Value& {
    if (!tuple) {
      if (next++ > 0) bad(budget, "not enough arguments for format string");
      return args;
    }
    if (next >= list.size()) bad(budget, "not enough arguments for format string");
    return list[next++];
  };
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) bad(budget, "incomplete format");
    const Value* value = nullptr;
    if (fmt[i] == '(') {  // %(name)s takes a dict's member
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos || args.kind != Value::Kind::Object) bad(budget, "format requires a mapping");
      value = args.find(fmt.substr(i + 1, close - i - 1));
      if (!value) bad(budget, "no key '" + fmt.substr(i + 1, close - i - 1) + "' for the format");
      i = close + 1;
      next = 1;
    }
    Spec s = percent_spec(fmt, i, take, budget);
    while (i < fmt.size() && (fmt[i] == 'l' || fmt[i] == 'h' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) bad(budget, "incomplete format");
    const char c = fmt[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    const Value& v = value ? *value : take();
    const std::string piece = percent_conversion(c, v, s, budget);
    budget.check_string(out.size() + piece.size(), "%");
    out += piece;
  }
  if (tuple ? next < list.size() : (next == 0 && args.kind != Value::Kind::Object))
    bad(budget, "not all arguments converted during string formatting");
  budget.build_string(out.size(), "%");
  return out;
}

namespace {

// A replacement field's value: an argument, then .attr and [key] steps.
Value field_value(const std::string& field, const std::vector<Value>& args, const Kwargs& kwargs, size_t& auto_index,
                  int& numbering, Budget& b) {
  size_t i = 0;
  while (i < field.size() && field[i] != '.' && field[i] != '[') ++i;
  const std::string head = field.substr(0, i);
  Value v;
  if (head.empty() || std::isdigit(static_cast<unsigned char>(head[0]))) {
    const int mode = head.empty() ? 1 : 2;
    if (numbering && numbering != mode) bad(b, "cannot switch between automatic and manual field numbering");
    numbering = mode;
    const size_t k = head.empty() ? auto_index++ : size_t(std::stoull(head.substr(0, 9)));
    if (k >= args.size()) bad(b, "format(): replacement index " + std::to_string(k) + " out of range");
    v = args[k];
  } else {
    const Value& named = builtin::arg({}, kwargs, 0, head.c_str());
    if (!named.defined()) bad(b, "format(): no argument named '" + head + "'");
    v = named;
  }
  while (i < field.size()) {
    if (field[i] == '.') {
      size_t j = ++i;
      while (j < field.size() && field[j] != '.' && field[j] != '[') ++j;
      v = get_attribute(v, field.substr(i, j - i), b);
      i = j;
    } else {
      const size_t close = field.find(']', i);
      if (close == std::string::npos) bad(b, "format(): a field's '[' is not closed");
      const std::string key = field.substr(i + 1, close - i - 1);
      const bool number = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      v = get_item(v, number ? Value::integer(std::stoll(key.substr(0, 18))) : Value::string(key), b);
      i = close + 1;
    }
  }
  return v;
}

}  // namespace

namespace {

// str.format over `fmt`; auto_index and numbering carry the automatic field numbering into
// the fields nested in a spec ('{:{}}' takes two arguments in turn).
std::string format_fields(const std::string& fmt, const std::vector<Value>& args, const Kwargs& kwargs,
                          size_t& auto_index, int& numbering, Budget& budget) {
  budget.work(fmt.size(), "format");
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c, ++i;
      continue;
    }
    if (c == '}') bad(budget, "single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = i + 1;  // the matching '}': a spec may hold fields of its own, one level deep
    for (int depth = 1; close < fmt.size(); ++close) {
      depth += fmt[close] == '{' ? 1 : fmt[close] == '}' ? -1 : 0;
      if (depth == 0) break;
      if (depth > 2) bad(budget, "format(): fields nest too deeply");
    }
    if (close >= fmt.size()) bad(budget, "single '{' encountered in format string");
    const std::string field = fmt.substr(i + 1, close - i - 1);
    const size_t colon = field.find(':'), bang = field.find('!');
    const std::string name = field.substr(0, std::min(colon, bang));
    Value v = field_value(name, args, kwargs, auto_index, numbering, budget);
    if (bang != std::string::npos && bang < colon) {
      const std::string conv = field.substr(bang + 1, colon == std::string::npos ? std::string::npos : colon - bang - 1);
      if (conv == "r" || conv == "a") v = Value::string(to_repr(v, &budget));
      else if (conv == "s") v = Value::string(to_str(v, &budget));
      else bad(budget, "format(): unknown conversion '!" + conv + "'");
    }
    std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    if (spec.find('{') != std::string::npos) spec = format_fields(spec, args, kwargs, auto_index, numbering, budget);
    if (!spec.empty() && !v.is_string() && !v.is_number())  // object.__format__ takes no spec
      bad(budget, std::string("unsupported format string passed to a ") + kind_name(v.kind));
    const std::string piece = format_value(v, parse_format_spec(spec, budget), budget);
    budget.check_string(out.size() + piece.size(), "format");
    out += piece;
    i = close;
  }
  budget.build_string(out.size(), "format");
  return out;
}

}  // namespace

std::string str_format(const std::string& fmt, const std::vector<Value>& args, const Kwargs& kwargs, Budget& budget) {
  size_t auto_index = 0;
  int numbering = 0;
  return format_fields(fmt, args, kwargs, auto_index, numbering, budget);
}

}  // namespace brisk::jinja
