#include "tokenizer/jinja_builtins.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "base/error.hpp"

namespace brisk::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "chat template line " + std::to_string(line) + ": " + what, "chat_template");
}
[[noreturn]] void fail(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "chat template: " + what, "chat_template");
}

const char* const kSpace = " \t\n\r\v\f";

std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  const std::string set = chars.kind == Value::Kind::String ? chars.s : kSpace;
  size_t a = 0, b = s.size();
  if (left)
    while (a < b && set.find(s[a]) != std::string::npos) ++a;
  if (right)
    while (b > a && set.find(s[b - 1]) != std::string::npos) --b;
  return s.substr(a, b - a);
}

// Python str.split(sep=None, maxsplit=-1).
Array split(const std::string& s, const Value& sep, int64_t maxsplit) {
  Array out;
  if (sep.kind != Value::Kind::String) {  // runs of whitespace, ends ignored
    size_t i = 0;
    while (true) {
      while (i < s.size() && std::string(kSpace).find(s[i]) != std::string::npos) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && std::string(kSpace).find(s[e - 1]) != std::string::npos) --e;
        out.push_back(Value::string(s.substr(i, e - i)));
        break;
      }
      size_t j = i;
      while (j < s.size() && std::string(kSpace).find(s[j]) == std::string::npos) ++j;
      out.push_back(Value::string(s.substr(i, j - i)));
      i = j;
    }
    return out;
  }
  if (sep.s.empty()) fail("split() with an empty separator");
  size_t i = 0;
  while (true) {
    const size_t j = s.find(sep.s, i);
    if (j == std::string::npos || (maxsplit >= 0 && int64_t(out.size()) == maxsplit)) {
      out.push_back(Value::string(s.substr(i)));
      return out;
    }
    out.push_back(Value::string(s.substr(i, j - i)));
    i = j + sep.s.size();
  }
}

std::string replace(std::string s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  size_t i = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    i = s.find(from, i);
    if (i == std::string::npos) break;
    s.replace(i, from.size(), to);
    i += to.size();
  }
  return s;
}

std::string title(const std::string& s) {
  std::string out = s;
  bool prev_letter = false;
  for (auto& c : out) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c));
    if (letter) c = char(prev_letter ? std::tolower(static_cast<unsigned char>(c)) : std::toupper(static_cast<unsigned char>(c)));
    prev_letter = letter;
  }
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (auto& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const Value& arg(std::vector<Value>& args, Kwargs& kwargs, size_t pos, const char* name) {
  static const Value undefined;
  for (auto& [k, v] : kwargs)
    if (k == name) return v;
  return pos < args.size() ? args[pos] : undefined;
}

int64_t as_int(const Value& v, int64_t fallback) {
  if (v.kind == Value::Kind::Int) return v.i;
  if (v.kind == Value::Kind::Bool) return v.b;
  if (v.kind == Value::Kind::Float) return int64_t(v.f);
  return fallback;
}

bool affix(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const std::string& p) {
    return p.size() <= s.size() && (prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  if (what.kind == Value::Kind::String) return one(what.s);
  if (what.kind == Value::Kind::Array) {
    for (const auto& p : *what.arr)
      if (p.kind == Value::Kind::String && one(p.s)) return true;
    return false;
  }
  fail(std::string(prefix ? "startswith" : "endswith") + "() takes a string");
}

Value string_method(const std::string& s, const std::string& name) {
  auto m = [&](auto f) { return Value::callable(f); };
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return m([s, name](std::vector<Value>& a, Kwargs& k) {
      return Value::string(strip(s, arg(a, k, 0, "chars"), name != "rstrip", name != "lstrip"));
    });
  if (name == "split")
    return m([s](std::vector<Value>& a, Kwargs& k) {
      return Value::array(split(s, arg(a, k, 0, "sep"), as_int(arg(a, k, 1, "maxsplit"), -1)));
    });
  if (name == "startswith" || name == "endswith")
    return m([s, name](std::vector<Value>& a, Kwargs& k) {
      return Value::boolean(affix(s, arg(a, k, 0, "prefix"), name == "startswith"));
    });
  if (name == "upper") return m([s](std::vector<Value>&, Kwargs&) { return Value::string(upper(s)); });
  if (name == "lower") return m([s](std::vector<Value>&, Kwargs&) { return Value::string(lower(s)); });
  if (name == "title") return m([s](std::vector<Value>&, Kwargs&) { return Value::string(title(s)); });
  if (name == "capitalize")
    return m([s](std::vector<Value>&, Kwargs&) {
      std::string out = lower(s);
      if (!out.empty()) out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
      return Value::string(out);
    });
  if (name == "replace")
    return m([s](std::vector<Value>& a, Kwargs& k) {
      const Value &from = arg(a, k, 0, "old"), &to = arg(a, k, 1, "new");
      if (from.kind != Value::Kind::String || to.kind != Value::Kind::String) fail("replace() takes two strings");
      return Value::string(replace(s, from.s, to.s, as_int(arg(a, k, 2, "count"), -1)));
    });
  if (name == "find" || name == "count")
    return m([s, name](std::vector<Value>& a, Kwargs& k) {
      const Value& sub = arg(a, k, 0, "sub");
      if (sub.kind != Value::Kind::String) fail(name + "() takes a string");
      if (name == "find") {
        const size_t at = s.find(sub.s);
        return Value::integer(at == std::string::npos ? -1 : Value::string(s.substr(0, at)).length());
      }
      int64_t n = 0;
      if (sub.s.empty()) return Value::integer(Value::string(s).length() + 1);
      for (size_t i = s.find(sub.s); i != std::string::npos; i = s.find(sub.s, i + sub.s.size())) ++n;
      return Value::integer(n);
    });
  if (name == "join")
    return m([s](std::vector<Value>& a, Kwargs& k) {
      std::string out;
      bool first = true;
      for (const auto& x : arg(a, k, 0, "iterable").items()) {
        out += (first ? "" : s) + to_str(x);
        first = false;
      }
      return Value::string(out);
    });
  return Value();
}

Value dict_method(const Value& obj, const std::string& name) {
  if (name == "items")
    return Value::callable([obj](std::vector<Value>&, Kwargs&) {
      Array out;
      for (const auto& [k, v] : *obj.obj) out.push_back(Value::array({Value::string(k), v}));
      return Value::array(std::move(out));
    });
  if (name == "keys") return Value::callable([obj](std::vector<Value>&, Kwargs&) { return Value::array(obj.items()); });
  if (name == "values")
    return Value::callable([obj](std::vector<Value>&, Kwargs&) {
      Array out;
      for (const auto& kv : *obj.obj) out.push_back(kv.second);
      return Value::array(std::move(out));
    });
  if (name == "get")
    return Value::callable([obj](std::vector<Value>& a, Kwargs& k) {
      const Value& key = arg(a, k, 0, "key");
      const Value* v = key.kind == Value::Kind::String ? obj.find(key.s) : nullptr;
      if (v) return *v;
      const Value& d = arg(a, k, 1, "default");
      return d.defined() ? d : Value::none();
    });
  return Value();
}

// Python's normalisation of slice bounds.
void slice_bounds(int64_t len, const Value& start, const Value& stop, int64_t step, int64_t& a, int64_t& b) {
  auto norm = [&](const Value& v, int64_t dflt, int64_t lo, int64_t hi) {
    if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool) return dflt;
    int64_t x = as_int(v, 0);
    if (x < 0) x += len;
    return std::clamp(x, lo, hi);
  };
  if (step > 0) {
    a = norm(start, 0, 0, len);
    b = norm(stop, len, 0, len);
  } else {
    a = norm(start, len - 1, -1, len - 1);
    b = norm(stop, -1, -1, len - 1);
  }
}

Value numeric(const std::string& op, const Value& a, const Value& b, int line) {
  const bool ints = a.kind != Value::Kind::Float && b.kind != Value::Kind::Float;
  const int64_t x = as_int(a, 0), y = as_int(b, 0);
  const double p = a.as_double(), q = b.as_double();
  if (op == "+") return ints ? Value::integer(x + y) : Value::number(p + q);
  if (op == "-") return ints ? Value::integer(x - y) : Value::number(p - q);
  if (op == "*") return ints ? Value::integer(x * y) : Value::number(p * q);
  if (op == "/") {
    if (q == 0) fail(line, "division by zero");
    return Value::number(p / q);
  }
  if (op == "//" || op == "%") {
    if (q == 0) fail(line, "division by zero");
    if (ints) {
      int64_t d = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) --d, r += y;
      return Value::integer(op == "//" ? d : r);
    }
    const double d = std::floor(p / q);
    return Value::number(op == "//" ? d : p - d * q);
  }
  if (op == "**") {
    if (ints && y >= 0) {
      int64_t r = 1;
      for (int64_t k = 0; k < y && k < 64; ++k) r *= x;
      return Value::integer(r);
    }
    return Value::number(std::pow(p, q));
  }
  fail(line, "unknown operator " + op);
}

bool contains(const Value& hay, const Value& needle, int line) {
  switch (hay.kind) {
    case Value::Kind::String:
      if (needle.kind != Value::Kind::String) fail(line, "'in <string>' needs a string on the left");
      return hay.s.find(needle.s) != std::string::npos;
    case Value::Kind::Array:
      return std::any_of(hay.arr->begin(), hay.arr->end(), [&](const Value& x) { return equal(x, needle); });
    case Value::Kind::Object: return needle.kind == Value::Kind::String && hay.find(needle.s) != nullptr;
    case Value::Kind::Undefined: return false;
    default: fail(line, std::string("'in' needs a string, list or dict, not ") + kind_name(hay.kind));
  }
}

}  // namespace

Object global_functions() {
  Object g;
  g.emplace_back("range", Value::callable([](std::vector<Value>& a, Kwargs&) {
    int64_t start = 0, stop = 0, step = 1;
    if (a.size() == 1) stop = as_int(a[0], 0);
    else if (a.size() >= 2) start = as_int(a[0], 0), stop = as_int(a[1], 0), step = a.size() > 2 ? as_int(a[2], 1) : 1;
    if (step == 0) fail("range() step must not be zero");
    Array out;
    for (int64_t x = start; step > 0 ? x < stop : x > stop; x += step) {
      if (out.size() >= 1000000) fail("range() of more than a million values");
      out.push_back(Value::integer(x));
    }
    return Value::array(std::move(out));
  }));
  g.emplace_back("namespace", Value::callable([](std::vector<Value>& a, Kwargs& k) {
    Value ns = Value::object();
    ns.is_namespace = true;
    for (const auto& x : a)
      if (x.kind == Value::Kind::Object)
        for (const auto& [key, v] : *x.obj) ns.set(key, v);
    for (auto& [key, v] : k) ns.set(key, v);
    return ns;
  }));
  g.emplace_back("dict", Value::callable([](std::vector<Value>&, Kwargs& k) {
    Value d = Value::object();
    for (auto& [key, v] : k) d.set(key, v);
    return d;
  }));
  g.emplace_back("raise_exception", Value::callable([](std::vector<Value>& a, Kwargs&) -> Value {
    throw Error(ErrorCode::kInvalidArgument, a.empty() ? "the chat template refused the messages" : to_str(a[0]),
                "messages");
  }));
  g.emplace_back("strftime_now", Value::callable([](std::vector<Value>& a, Kwargs&) {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[256];
    const std::string fmt = a.empty() ? "%Y-%m-%d" : to_str(a[0]);
    const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return Value::string(std::string(buf, n));
  }));
  return g;
}

Value get_attribute(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case Value::Kind::Object: {
      if (!obj.is_namespace && (name == "items" || name == "keys" || name == "values" || name == "get"))
        return dict_method(obj, name);
      const Value* v = obj.find(name);
      return v ? *v : Value();
    }
    case Value::Kind::String: return string_method(obj.s, name);
    default: return Value();
  }
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.kind == Value::Kind::Object) {
    const Value* v = key.kind == Value::Kind::String ? obj.find(key.s) : nullptr;
    return v ? *v : Value();
  }
  if ((obj.kind == Value::Kind::Array || obj.kind == Value::Kind::String) &&
      (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
    const Array items = obj.kind == Value::Kind::Array ? Array() : obj.items();
    const Array& seq = obj.kind == Value::Kind::Array ? *obj.arr : items;
    int64_t k = as_int(key, 0);
    if (k < 0) k += int64_t(seq.size());
    return k >= 0 && k < int64_t(seq.size()) ? seq[size_t(k)] : Value();
  }
  if (key.kind == Value::Kind::String) return get_attribute(obj, key.s);
  return Value();
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  if (obj.kind != Value::Kind::Array && obj.kind != Value::Kind::String)
    fail(std::string("cannot slice a ") + kind_name(obj.kind));
  const Array seq = obj.items();
  const int64_t step = step_v.defined() && step_v.kind != Value::Kind::None ? as_int(step_v, 1) : 1;
  if (step == 0) fail("a slice step must not be zero");
  int64_t a, b;
  slice_bounds(int64_t(seq.size()), start, stop, step, a, b);
  Array out;
  for (int64_t k = a; step > 0 ? k < b : k > b; k += step) out.push_back(seq[size_t(k)]);
  if (obj.kind == Value::Kind::Array) return Value::array(std::move(out));
  std::string s;
  for (const auto& c : out) s += c.s;
  return Value::string(std::move(s));
}

Value binary_op(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return Value::boolean(equal(a, b));
  if (op == "!=") return Value::boolean(!equal(a, b));
  if (op == "<") return Value::boolean(less(a, b));
  if (op == ">") return Value::boolean(less(b, a));
  if (op == "<=") return Value::boolean(!less(b, a));
  if (op == ">=") return Value::boolean(!less(a, b));
  if (op == "in") return Value::boolean(contains(b, a, line));
  if (op == "not in") return Value::boolean(!contains(b, a, line));
  if (op == "~") return Value::string(to_str(a) + to_str(b));
  if (op == "+") {
    if (a.kind == Value::Kind::String && b.kind == Value::Kind::String) return Value::string(a.s + b.s);
    if (a.kind == Value::Kind::Array && b.kind == Value::Kind::Array) {
      Array out = *a.arr;
      out.insert(out.end(), b.arr->begin(), b.arr->end());
      return Value::array(std::move(out));
    }
  }
  if (op == "*" && (a.kind == Value::Kind::String || a.kind == Value::Kind::Array) && b.kind == Value::Kind::Int) {
    if (b.i > 100000) fail(line, "repetition of more than 100000");
    if (a.kind == Value::Kind::String) {
      std::string out;
      for (int64_t k = 0; k < b.i; ++k) out += a.s;
      return Value::string(out);
    }
    Array out;
    for (int64_t k = 0; k < b.i; ++k) out.insert(out.end(), a.arr->begin(), a.arr->end());
    return Value::array(std::move(out));
  }
  if (a.is_number() && b.is_number()) return numeric(op, a, b, line);
  fail(line, std::string("unsupported operand types for ") + op + ": " + kind_name(a.kind) + " and " + kind_name(b.kind));
}

namespace {

Value sort_keys(const Value& v) {
  if (v.kind == Value::Kind::Array) {
    Array out;
    for (const auto& x : *v.arr) out.push_back(sort_keys(x));
    return Value::array(std::move(out));
  }
  if (v.kind != Value::Kind::Object) return v;
  Object o;
  for (const auto& [k, x] : *v.obj) o.emplace_back(k, sort_keys(x));
  std::stable_sort(o.begin(), o.end(), [](const auto& p, const auto& q) { return p.first < q.first; });
  return Value::object(std::move(o));
}

Value attribute_path(const Value& v, const Value& attr) {
  Value cur = v;
  const std::string path = to_str(attr);
  size_t i = 0;
  while (i <= path.size()) {
    const size_t j = std::min(path.find('.', i), path.size());
    cur = get_item(cur, Value::string(path.substr(i, j - i)));
    i = j + 1;
  }
  return cur;
}

}  // namespace

bool apply_test(const std::string& name, const Value& v, std::vector<Value>& args, int line) {
  using K = Value::Kind;
  auto need = [&](size_t n) {
    if (args.size() < n) fail(line, "test '" + name + "' takes an argument");
  };
  if (name == "defined") return v.defined();
  if (name == "undefined") return !v.defined();
  if (name == "none") return v.kind == K::None;
  if (name == "string") return v.kind == K::String;
  if (name == "number") return v.kind == K::Int || v.kind == K::Float;
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "mapping") return v.kind == K::Object;
  if (name == "iterable") return v.kind == K::Array || v.kind == K::Object || v.kind == K::String || v.kind == K::Undefined;
  if (name == "sequence") return v.kind == K::Array || v.kind == K::Object || v.kind == K::String;
  if (name == "callable") return v.kind == K::Callable;
  if (name == "odd" || name == "even") {
    if (v.kind != K::Int) fail(line, "test '" + name + "' needs an integer");
    return (((v.i % 2) + 2) % 2 == 1) == (name == "odd");
  }
  if (name == "divisibleby") {
    need(1);
    const int64_t d = as_int(args[0], 0);
    if (d == 0) fail(line, "divisibleby 0");
    return as_int(v, 0) % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return need(1), equal(v, args[0]);
  if (name == "ne" || name == "!=") return need(1), !equal(v, args[0]);
  if (name == "lt" || name == "lessthan" || name == "<") return need(1), less(v, args[0]);
  if (name == "gt" || name == "greaterthan" || name == ">") return need(1), less(args[0], v);
  if (name == "le" || name == "<=") return need(1), !less(args[0], v);
  if (name == "ge" || name == ">=") return need(1), !less(v, args[0]);
  if (name == "in") return need(1), contains(args[0], v, line);
  if (name == "sameas") {
    need(1);
    if (v.kind != args[0].kind) return false;
    if (v.kind == K::Array) return v.arr == args[0].arr;
    if (v.kind == K::Object) return v.obj == args[0].obj;
    return equal(v, args[0]);
  }
  if (name == "lower") return v.kind == K::String && lower(v.s) == v.s;
  if (name == "upper") return v.kind == K::String && upper(v.s) == v.s;
  fail(line, "unknown test '" + name + "'");
}

Value apply_filter(const std::string& name, const Value& v, std::vector<Value>& args, Kwargs& kwargs, int line) {
  using K = Value::Kind;
  auto str_in = [&]() -> const std::string& {
    if (v.kind != K::String) fail(line, "filter '" + name + "' needs a string, not a " + kind_name(v.kind));
    return v.s;
  };
  if (name == "length" || name == "count") return Value::integer(v.length());
  if (name == "trim") return Value::string(strip(to_str(v), arg(args, kwargs, 0, "chars"), true, true));
  if (name == "tojson") {
    const Value& sk = arg(args, kwargs, 99, "sort_keys");
    return Value::string(to_json(sk.truthy() ? sort_keys(v) : v, int(as_int(arg(args, kwargs, 0, "indent"), 0))));
  }
  if (name == "lower") return Value::string(lower(to_str(v)));
  if (name == "upper") return Value::string(upper(to_str(v)));
  if (name == "title") return Value::string(title(to_str(v)));
  if (name == "capitalize") {
    std::string out = lower(to_str(v));
    if (!out.empty()) out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
    return Value::string(out);
  }
  if (name == "string") return Value::string(to_str(v));
  if (name == "safe" || name == "escape_none") return v;
  if (name == "int") {
    if (v.kind == K::String) {
      char* end = nullptr;
      const long long x = std::strtoll(v.s.c_str(), &end, 10);
      return Value::integer(end && *end == '\0' && !v.s.empty() ? x : as_int(arg(args, kwargs, 0, "default"), 0));
    }
    return Value::integer(v.is_number() ? as_int(v, 0) : as_int(arg(args, kwargs, 0, "default"), 0));
  }
  if (name == "float") return Value::number(v.is_number() ? v.as_double() : 0.0);
  if (name == "abs") return v.kind == K::Int ? Value::integer(v.i < 0 ? -v.i : v.i) : Value::number(std::fabs(v.as_double()));
  if (name == "default" || name == "d") {
    const bool boolean = arg(args, kwargs, 1, "boolean").truthy();
    if (!v.defined() || (boolean && !v.truthy())) {
      const Value& d = arg(args, kwargs, 0, "default_value");
      return d.defined() ? d : Value::string("");
    }
    return v;
  }
  if (name == "list") return Value::array(v.items());
  if (name == "first" || name == "last") {
    const Array items = v.items();
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.kind == K::String) {
      Array items = v.items();
      std::string out;
      for (auto it = items.rbegin(); it != items.rend(); ++it) out += it->s;
      return Value::string(out);
    }
    Array items = v.items();
    std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
  }
  if (name == "items") {
    if (v.kind == K::Undefined) return Value::array();
    if (v.kind != K::Object) fail(line, "filter 'items' needs a dict");
    Array out;
    for (const auto& [k, x] : *v.obj) out.push_back(Value::array({Value::string(k), x}));
    return Value::array(std::move(out));
  }
  if (name == "join") {
    const Value& sep = arg(args, kwargs, 0, "d");
    const Value& attr = arg(args, kwargs, 1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& x : v.items()) {
      out += (first ? "" : to_str(sep)) + to_str(attr.defined() ? attribute_path(x, attr) : x);
      first = false;
    }
    return Value::string(out);
  }
  if (name == "replace") {
    const Value &from = arg(args, kwargs, 0, "old"), &to = arg(args, kwargs, 1, "new");
    return Value::string(replace(to_str(v), to_str(from), to_str(to), as_int(arg(args, kwargs, 2, "count"), -1)));
  }
  if (name == "indent") {
    const Value& w = arg(args, kwargs, 0, "width");
    const std::string pad = w.kind == K::String ? w.s : std::string(size_t(as_int(w, 4)), ' ');
    const bool first = arg(args, kwargs, 1, "first").truthy(), blank = arg(args, kwargs, 2, "blank").truthy();
    const std::string& s = str_in();
    std::string out;
    size_t i = 0;
    bool line_start = true, first_line = true;
    for (; i < s.size(); ++i) {
      if (line_start) {
        const bool empty = s[i] == '\n';
        if ((!first_line || first) && (blank || !empty)) out += pad;
        line_start = false;
      }
      out += s[i];
      if (s[i] == '\n') line_start = true, first_line = false;
    }
    return Value::string(out);
  }
  if (name == "map" || name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    Array out;
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    for (const auto& x : v.items()) {
      if (name == "map") {
        const Value& attr = arg(args, kwargs, 99, "attribute");
        if (attr.defined()) {
          Value y = attribute_path(x, attr);
          const Value& d = arg(args, kwargs, 99, "default");
          out.push_back(!y.defined() && d.defined() ? d : y);
        } else {
          if (args.empty()) fail(line, "map() needs a filter name or attribute=");
          std::vector<Value> rest(args.begin() + 1, args.end());
          Kwargs none;
          out.push_back(apply_filter(to_str(args[0]), x, rest, none, line));
        }
        continue;
      }
      const size_t first_test_arg = by_attr ? 1 : 0;
      const Value subject = by_attr ? (args.empty() ? Value() : attribute_path(x, args[0])) : x;
      bool ok;
      if (args.size() <= first_test_arg) {
        ok = subject.truthy();
      } else {
        std::vector<Value> targs(args.begin() + int64_t(first_test_arg) + 1, args.end());
        ok = apply_test(to_str(args[first_test_arg]), subject, targs, line);
      }
      if (ok == (name == "select" || name == "selectattr")) out.push_back(x);
    }
    return Value::array(std::move(out));
  }
  if (name == "sort") {
    Array items = v.items();
    const bool rev = arg(args, kwargs, 0, "reverse").truthy();
    const Value& attr = arg(args, kwargs, 2, "attribute");
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      const Value x = attr.defined() ? attribute_path(a, attr) : a, y = attr.defined() ? attribute_path(b, attr) : b;
      return rev ? less(y, x) : less(x, y);
    });
    return Value::array(std::move(items));
  }
  if (name == "unique") {
    Array out;
    for (const auto& x : v.items())
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); })) out.push_back(x);
    return Value::array(std::move(out));
  }
  if (name == "round") {
    const int64_t prec = as_int(arg(args, kwargs, 0, "precision"), 0);
    const double scale = std::pow(10.0, double(prec));
    return Value::number(std::nearbyint(v.as_double() * scale) / scale);
  }
  if (name == "wordcount") return Value::integer(int64_t(split(str_in(), Value(), -1).size()));
  fail(line, "unknown filter '" + name + "'");
}

}  // namespace brisk::jinja
