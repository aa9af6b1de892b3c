#include "template/jinja_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/error.hpp"
#include "template/jinja_ints.hpp"
#include "base/utf8.hpp"

namespace brisk::jinja {

Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Kind::Bool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.kind = Kind::Int;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.kind = Kind::Float;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  Value v;
  v.kind = Kind::String;
  v.sp = std::make_shared<const std::string>(std::move(x));
  return v;
}
Value Value::array(Array x) {
  Value v;
  v.kind = Kind::Array;
  v.arr = std::make_shared<Array>(std::move(x));
  return v;
}
Value Value::object(Object x) {
  Value v;
  v.kind = Kind::Object;
  v.obj = std::make_shared<Object>(std::move(x));
  return v;
}
Value Value::callable(Function f) {
  Value v;
  v.kind = Kind::Callable;
  v.fn = std::make_shared<Function>(std::move(f));
  return v;
}

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Undefined: return "undefined";
    case Value::Kind::None: return "none";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "string";
    case Value::Kind::Array: return "list";
    case Value::Kind::Object: return "dict";
    case Value::Kind::Callable: return "callable";
  }
  return "?";
}

const std::string& Value::str() const {
  static const std::string empty;
  return kind == Kind::String && sp ? *sp : empty;
}

double Value::as_double() const {
  if (kind == Kind::Int) return u ? double(uint64_t(i)) : double(i);
  if (kind == Kind::Float) return f;
  if (kind == Kind::Bool) return b ? 1 : 0;
  throw Error(ErrorCode::kInvalidArgument, std::string("chat template: expected a number, got ") + kind_name(kind));
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b;
    case Kind::Int: return i != 0;
    case Kind::Float: return f != 0;
    case Kind::String: return !str().empty();
    case Kind::Array: return !arr->empty();
    case Kind::Object: return !obj->empty();
    case Kind::Callable: return true;
  }
  return false;
}

const Value* Value::find(const std::string& key) const {
  if (kind != Kind::Object) return nullptr;
  for (const auto& [k, v] : *obj)
    if (k == key) return &v;
  return nullptr;
}

void Value::set(const std::string& key, Value v) {
  for (auto& [k, old] : *obj)
    if (k == key) {
      old = std::move(v);
      return;
    }
  obj->emplace_back(key, std::move(v));
}

Array Value::items() const {
  switch (kind) {
    case Kind::Undefined: return {};
    case Kind::Array: return *arr;
    case Kind::Object: {
      Array keys;
      for (const auto& kv : *obj) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Kind::String: {
      const std::string& s = str();
      Array chars;
      for (size_t p = 0; p < s.size();) {
        size_t n = utf8::valid_len(s, p);
        if (n == 0) n = 1;
        chars.push_back(Value::string(s.substr(p, n)));
        p += n;
      }
      return chars;
    }
    default: break;
  }
  throw Error(ErrorCode::kInvalidArgument, std::string("chat template: a ") + kind_name(kind) + " is not iterable");
}

int64_t Value::length() const {
  switch (kind) {
    case Kind::Undefined: return 0;
    case Kind::Array: return int64_t(arr->size());
    case Kind::Object: return int64_t(obj->size());
    case Kind::String: {  // code points; a stray byte counts as one
      const std::string& s = str();
      int64_t n = 0;
      for (size_t p = 0; p < s.size(); ++n) p += std::max<size_t>(1, utf8::valid_len(s, p));
      return n;
    }
    default: break;
  }
  throw Error(ErrorCode::kInvalidArgument, std::string("chat template: a ") + kind_name(kind) + " has no length");
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // The fewest significant digits that read back to v, then Python's layout of them: plain
  // from 1e-4 up to 1e16, else d.ddde+XX.
  char buf[40];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  const bool neg = s[0] == '-';
  if (neg) s = s.substr(1);
  const size_t e = s.find('e');
  const int exp = std::atoi(s.c_str() + e + 1);
  std::string digits = s.substr(0, 1) + (e > 2 ? s.substr(2, e - 2) : "");
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp) + 1 >= digits.size()) {
      out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
  } else {
    out = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return neg ? "-" + out : out;
}

namespace {

// Serialisers check the text they build against the budget's string cap as they go (a list
// that holds itself twice, nested 40 deep, would otherwise print terabytes), and charge it
// once at the end.
void check_size(const std::string& out, Budget* budget, const char* what) {
  if (budget && out.size() > budget->limits().max_string_bytes) budget->build_string(out.size(), what);
}

// Values nest only as deep as a template builds them, but a list or namespace can hold itself
// ({% set ns.v = [ns] %}): every walk over a value's members stops at this depth (Python's
// json raises "Circular reference detected" there; its repr recurses until its own limit).
constexpr int kMaxValueNesting = 256;

void check_nesting(int depth, const char* what) {
  if (depth > kMaxValueNesting)
    throw Error(ErrorCode::kLimit, std::string("chat template: ") + what + " of a value nested more than " +
                                       std::to_string(kMaxValueNesting) + " levels deep (or holding itself)");
}

struct CodeRange {
  uint32_t first, last;
};
constexpr CodeRange kUnprintable[] = {
#include "template/jinja_printable_table.inc"
};

// str.isprintable() for a code point above U+007F.
bool printable(uint32_t cp) {
  const auto it = std::lower_bound(std::begin(kUnprintable), std::end(kUnprintable), cp,
                                   [](const CodeRange& r, uint32_t c) { return r.last < c; });
  return it == std::end(kUnprintable) || cp < it->first;
}

// Python's repr of a string: quotes, backslash escapes, and \xhh / \uhhhh / \Uhhhhhhhh for the
// characters str.isprintable() rejects.
void quote_repr(std::string& out, const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  out += q;
  for (size_t p = 0; p < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[p]);
    uint32_t cp = c;
    size_t n = c < 0x80 ? 1 : utf8::valid_len(s, p, &cp);
    if (n == 0) n = 1, cp = 0x20;  // a stray byte (no Python string holds one) passes as is
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + char(q);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && !printable(cp))) {
      char b[16];
      std::snprintf(b, sizeof b, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
      out += b;
    } else out.append(s, p, n);
    p += n;
  }
  out += q;
}

void repr_into(std::string& out, const Value& v, Budget* budget, int depth = 0) {
  check_size(out, budget, "repr");
  check_nesting(depth, "repr");
  switch (v.kind) {
    case Value::Kind::String: quote_repr(out, v.str()); return;
    case Value::Kind::Array:
      out += v.is_tuple ? '(' : '[';
      for (size_t k = 0; k < v.arr->size(); ++k) {
        if (k) out += ", ";
        repr_into(out, (*v.arr)[k], budget, depth + 1);
      }
      if (v.is_tuple && v.arr->size() == 1) out += ',';
      out += v.is_tuple ? ')' : ']';
      return;
    case Value::Kind::Object: {
      out += '{';
      bool first = true;
      for (const auto& [k, x] : *v.obj) {
        if (!first) out += ", ";
        first = false;
        quote_repr(out, k);
        out += ": ";
        repr_into(out, x, budget, depth + 1);
      }
      out += '}';
      return;
    }
    default: out += to_str(v); return;
  }
}

void json_escape_code(std::string& out, uint32_t cp) {
  char b[8];
  std::snprintf(b, sizeof b, "\\u%04x", cp);
  out += b;
}

// Python's json string escaping: the control characters below U+0020, '"' and '\\'; with
// ensure_ascii, every code point above U+007F as \uXXXX (UTF-16 surrogate pairs above U+FFFF).
void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t p = 0; p < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[p]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          json_escape_code(out, c);
        } else if (c >= 0x80 && ensure_ascii) {
          uint32_t cp = 0xFFFD;
          const size_t n = utf8::valid_len(s, p, &cp);
          if (cp > 0xFFFF) {
            json_escape_code(out, 0xD800 + ((cp - 0x10000) >> 10));
            json_escape_code(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
          } else {
            json_escape_code(out, cp);
          }
          p += std::max<size_t>(n, 1);
          continue;
        } else {
          out += char(c);
        }
    }
    ++p;
  }
  out += '"';
}

struct JsonWriter {
  const JsonStyle& style;
  Budget* budget;
  std::string out;

  void newline(int depth) {
    if (style.indent < 0) return;
    out += '\n';
    out.append(size_t(style.indent) * size_t(depth), ' ');
  }

  template <class Each>
  void container(char open, char close, size_t n, int depth, Each each) {
    if (n == 0) {
      out += open, out += close;
      return;
    }
    out += open;
    const std::string sep = style.item_sep ? *style.item_sep : style.indent >= 0 ? "," : ", ";
    for (size_t k = 0; k < n; ++k) {
      if (k) out += sep;
      newline(depth + 1);
      each(k);
    }
    newline(depth);
    out += close;
  }

  void write(const Value& v, int depth) {
    check_size(out, budget, "tojson");
    check_nesting(depth, "tojson");
    switch (v.kind) {
      case Value::Kind::Undefined:
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
      case Value::Kind::Int: out += int_to_string(int_value(v)); return;
      case Value::Kind::Float:
        out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity") : float_repr(v.f);
        return;
      case Value::Kind::String: json_string(out, v.str(), style.ensure_ascii); return;
      case Value::Kind::Array:
        container('[', ']', v.arr->size(), depth, [&](size_t k) { write((*v.arr)[k], depth + 1); });
        return;
      case Value::Kind::Object: {
        std::vector<const std::pair<std::string, Value>*> members;
        for (const auto& m : *v.obj) members.push_back(&m);
        if (style.sort_keys)
          std::stable_sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->first < b->first; });
        container('{', '}', members.size(), depth, [&](size_t k) {
          json_string(out, members[k]->first, style.ensure_ascii);
          out += style.key_sep;
          write(members[k]->second, depth + 1);
        });
        return;
      }
      case Value::Kind::Callable: break;
    }
    throw Error(ErrorCode::kInvalidArgument, "chat template: a callable cannot be written as JSON");
  }
};

bool equal_inner(const Value& a, const Value& b, Budget* budget, int depth = 0) {
  if (budget) budget->work(1, "==");
  check_nesting(depth, "comparison");
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) return int_value(a) == int_value(b);
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String:
      if (budget) budget->work(a.str().size(), "==");
      return a.str() == b.str();
    case Value::Kind::Array: {
      if (a.arr == b.arr) return true;  // Python compares a list's items by identity first too
      if (a.arr->size() != b.arr->size() || a.is_tuple != b.is_tuple) return false;  // (1, 2) != [1, 2]
      for (size_t k = 0; k < a.arr->size(); ++k)
        if (!equal_inner((*a.arr)[k], (*b.arr)[k], budget, depth + 1)) return false;
      return true;
    }
    case Value::Kind::Object: {
      if (a.obj == b.obj) return true;
      if (a.obj->size() != b.obj->size()) return false;
      for (const auto& [k, x] : *a.obj) {
        const Value* y = b.find(k);
        if (!y || !equal_inner(x, *y, budget, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::Callable: return a.fn == b.fn;
    default: return false;
  }
}

}  // namespace

std::string to_repr(const Value& v, Budget* budget) {
  std::string out;
  repr_into(out, v, budget);
  if (budget) budget->build_string(out.size(), "repr");
  return out;
}

std::string to_str(const Value& v, Budget* budget) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return int_to_string(int_value(v));
    case Value::Kind::Float: return float_repr(v.f);
    case Value::Kind::String: return v.str();
    case Value::Kind::Callable: return "<function>";
    default: return to_repr(v, budget);
  }
}

std::string to_json(const Value& v, const JsonStyle& style, Budget* budget) {
  JsonWriter w{style, budget, {}};
  w.write(v, 0);
  if (budget) budget->build_string(w.out.size(), "tojson");
  return std::move(w.out);
}

bool equal(const Value& a, const Value& b, Budget* budget) { return equal_inner(a, b, budget); }

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) return int_value(a) < int_value(b);
    return a.as_double() < b.as_double();
  }
  if (a.kind == Value::Kind::String && b.kind == Value::Kind::String) return a.str() < b.str();
  throw Error(ErrorCode::kInvalidArgument, std::string("chat template: cannot compare ") + kind_name(a.kind) + " with " +
                                               kind_name(b.kind));
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return make_int(Int128(j.get<uint64_t>()), "json");
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& x : j) a.push_back(from_json(x));
      return Value::array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      for (auto it = j.begin(); it != j.end(); ++it) o.emplace_back(it.key(), from_json(it.value()));
      return Value::object(std::move(o));
    }
    default: break;
  }
  return Value();
}

}  // namespace brisk::jinja
