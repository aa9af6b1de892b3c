// The globals, attribute and item access, slicing and the operators (filters and tests are
// in jinja_filters.cpp, str methods in jinja_string_methods.cpp).
#include "template/jinja_builtins.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "template/jinja_ints.hpp"
#include "template/jinja_strings.hpp"

namespace brisk::jinja {

namespace builtin {

const Value& arg(const std::vector<Value>& args, const Kwargs& kwargs, size_t pos, const char* name) {
  static const Value undefined;
  for (auto& [k, v] : kwargs)
    if (k == name) return v;
  return pos < args.size() ? args[pos] : undefined;
}

int64_t as_int(const Value& v, int64_t fallback) {
  if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) return clamp_int64(int_value(v));
  if (v.kind == Value::Kind::Float) {
    if (std::isnan(v.f)) return fallback;
    return v.f >= 9.2e18 ? INT64_MAX : v.f <= -9.2e18 ? INT64_MIN : int64_t(v.f);
  }
  return fallback;
}

const std::string& need_string(const Value& v, const std::string& what, const Budget& budget) {
  if (!v.is_string()) budget.fail(ErrorCode::kInvalidArgument, what + " needs a string, not a " + kind_name(v.kind));
  return v.str();
}

Value repeat(const Value& x, int64_t n, Budget& budget) {
  if (n < 1) return x.is_string() ? Value::string("") : Value::array();
  if (x.is_string()) {
    const std::string& s = x.str();
    if (!s.empty() && uint64_t(n) > budget.limits().max_string_bytes / s.size())
      budget.check_string(budget.limits().max_string_bytes + 1, "*");
    budget.build_string(s.size() * size_t(n), "*");
    std::string out;
    out.reserve(s.size() * size_t(n));
    for (int64_t k = 0; k < n; ++k) out += s;
    return Value::string(std::move(out));
  }
  const Array& a = *x.arr;
  if (!a.empty() && uint64_t(n) > budget.limits().max_list_items / a.size())
    budget.build_list(budget.limits().max_list_items + 1, "*");
  budget.build_list(a.size() * size_t(n), "*");
  Array out;
  out.reserve(a.size() * size_t(n));
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), a.begin(), a.end());
  return Value::array(std::move(out));
}

}  // namespace builtin

using builtin::arg;
using builtin::as_int;

namespace {

[[noreturn]] void bad(const Budget& b, const std::string& what) { b.fail(ErrorCode::kInvalidArgument, what); }

Value range(std::vector<Value>& a, Budget& budget) {
  Int128 start = 0, stop = 0, step = 1;
  for (const auto& x : a)
    if (x.kind != Value::Kind::Int && x.kind != Value::Kind::Bool) bad(budget, "range() takes integers");
  if (a.size() == 1) stop = int_value(a[0]);
  else if (a.size() >= 2) start = int_value(a[0]), stop = int_value(a[1]), step = a.size() > 2 ? int_value(a[2]) : 1;
  if (step == 0) bad(budget, "range() step must not be zero");
  const Int128 span = step > 0 ? stop - start : start - stop, mag = step > 0 ? step : -step;
  const Int128 count = span <= 0 ? 0 : (span + mag - 1) / mag;
  budget.build_list(count > Int128(SIZE_MAX / 2) ? SIZE_MAX / 2 : size_t(count), "range");
  Array out;
  out.reserve(size_t(count));
  for (Int128 k = 0; k < count; ++k) out.push_back(make_int(start + k * step, "range", &budget));
  return Value::array(std::move(out));
}

}  // namespace

Object global_functions(Budget& budget, std::vector<std::shared_ptr<Object>>* namespaces) {
  Budget* b = &budget;
  Object g;
  g.emplace_back("range", Value::callable([b](std::vector<Value>& a, Kwargs&) { return range(a, *b); }));
  g.emplace_back("namespace", Value::callable([b, namespaces](std::vector<Value>& a, Kwargs& k) {
    Value ns = Value::object();
    ns.is_namespace = true;
    namespaces->push_back(ns.obj);
    for (const auto& x : a)
      if (x.kind == Value::Kind::Object) {
        b->items(x.obj->size(), "namespace");
        b->work(x.obj->size() * x.obj->size(), "namespace");  // set() scans the members it has
        for (const auto& [key, v] : *x.obj) ns.set(key, v);
      }
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

namespace {

Value dict_method(const Value& obj, const std::string& name, Budget& budget) {
  Budget* b = &budget;
  if (name == "items")
    return Value::callable([obj, b](std::vector<Value>&, Kwargs&) {
      b->build_list(obj.obj->size(), "items");
      Array out;
      for (const auto& [k, v] : *obj.obj) {
        Value pair = Value::array({Value::string(k), v});
        pair.is_tuple = true;
        out.push_back(std::move(pair));
      }
      return Value::array(std::move(out));
    });
  if (name == "keys")
    return Value::callable([obj, b](std::vector<Value>&, Kwargs&) {
      b->build_list(obj.obj->size(), "keys");
      return Value::array(obj.items());
    });
  if (name == "values")
    return Value::callable([obj, b](std::vector<Value>&, Kwargs&) {
      b->build_list(obj.obj->size(), "values");
      Array out;
      for (const auto& kv : *obj.obj) out.push_back(kv.second);
      return Value::array(std::move(out));
    });
  if (name == "get")
    return Value::callable([obj](std::vector<Value>& a, Kwargs& k) {
      const Value& key = arg(a, k, 0, "key");
      const Value* v = key.is_string() ? obj.find(key.str()) : nullptr;
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
    if (x < 0) x = x < -len ? -len - 1 : x + len;
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

// CPython's float_divmod: the remainder takes the divisor's sign; the quotient is rounded so
// that q * div + mod == p as nearly as doubles allow.
Value float_divmod(double p, double q, bool want_div) {
  double mod = std::fmod(p, q), div = (p - mod) / q;
  if (mod != 0) {
    if ((q < 0) != (mod < 0)) mod += q, div -= 1.0;
  } else {
    mod = std::copysign(0.0, q);
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, p / q);
  }
  return Value::number(want_div ? floordiv : mod);
}

Value numeric(const std::string& op, const Value& a, const Value& b, Budget& budget) {
  if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float && op != "/")
    return int_arith(op, int_value(a), int_value(b), &budget);
  const double p = a.as_double(), q = b.as_double();
  if (op == "+") return Value::number(p + q);
  if (op == "-") return Value::number(p - q);
  if (op == "*") return Value::number(p * q);
  if (op == "/" || op == "//" || op == "%") {
    if (q == 0) bad(budget, "division by zero");
    if (op == "/") return Value::number(p / q);
    return float_divmod(p, q, op == "//");
  }
  if (op == "**") {
    if (p == 0 && q < 0) bad(budget, "0.0 cannot be raised to a negative power");
    const double r = std::pow(p, q);
    if (std::isinf(r) && std::isfinite(p) && std::isfinite(q)) budget.fail(ErrorCode::kLimit, "float overflow in '**'");
    if (std::isnan(r) && !std::isnan(p) && !std::isnan(q)) bad(budget, "a negative number cannot be raised to a fractional power");
    return Value::number(r);
  }
  bad(budget, "unknown operator " + op);
}

bool contains(const Value& hay, const Value& needle, Budget& budget) {
  switch (hay.kind) {
    case Value::Kind::String:
      if (!needle.is_string()) bad(budget, "'in <string>' needs a string on the left");
      budget.work(hay.str().size(), "in");
      return hay.str().find(needle.str()) != std::string::npos;
    case Value::Kind::Array:
      return std::any_of(hay.arr->begin(), hay.arr->end(), [&](const Value& x) { return equal(x, needle, &budget); });
    case Value::Kind::Object: return needle.is_string() && hay.find(needle.str()) != nullptr;
    case Value::Kind::Undefined: return false;
    default: bad(budget, std::string("'in' needs a string, list or dict, not ") + kind_name(hay.kind));
  }
}

Value concat(const Value& a, const Value& b, Budget& budget) {
  if (a.is_string() && b.is_string()) {
    budget.build_string(a.str().size() + b.str().size(), "+");
    return Value::string(a.str() + b.str());
  }
  budget.build_list(a.arr->size() + b.arr->size(), "+");
  Array out = *a.arr;
  out.insert(out.end(), b.arr->begin(), b.arr->end());
  Value v = Value::array(std::move(out));
  v.is_tuple = a.is_tuple;
  return v;
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name, Budget& budget) {
  switch (obj.kind) {
    case Value::Kind::Object: {
      budget.work(obj.obj->size(), "attribute");  // members are found by a scan
      if (!obj.is_namespace && (name == "items" || name == "keys" || name == "values" || name == "get"))
        return dict_method(obj, name, budget);
      const Value* v = obj.find(name);
      return v ? *v : Value();
    }
    case Value::Kind::String: return string_method(obj, name, budget);
    default: return Value();
  }
}

Value get_item(const Value& obj, const Value& key, Budget& budget) {
  if (obj.kind == Value::Kind::Object) {
    budget.work(obj.obj->size(), "[]");
    const Value* v = key.is_string() ? obj.find(key.str()) : nullptr;
    return v ? *v : Value();
  }
  if ((obj.kind == Value::Kind::Array || obj.is_string()) &&
      (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
    int64_t k = as_int(key, 0);
    if (obj.kind == Value::Kind::Array) {
      const int64_t n = int64_t(obj.arr->size());
      if (k < 0) k = k < -n ? n : k + n;
      return k >= 0 && k < n ? (*obj.arr)[size_t(k)] : Value();
    }
    budget.work(obj.str().size(), "[]");
    const Array chars = obj.items();
    const int64_t n = int64_t(chars.size());
    if (k < 0) k = k < -n ? n : k + n;
    return k >= 0 && k < n ? chars[size_t(k)] : Value();
  }
  if (key.is_string()) return get_attribute(obj, key.str(), budget);
  return Value();
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v, Budget& budget) {
  if (obj.kind != Value::Kind::Array && !obj.is_string()) bad(budget, std::string("cannot slice a ") + kind_name(obj.kind));
  const int64_t step = step_v.defined() && step_v.kind != Value::Kind::None ? as_int(step_v, 1) : 1;
  if (step == 0) bad(budget, "a slice step must not be zero");
  if (obj.is_string()) budget.work(obj.str().size(), "slice");
  const Array chars = obj.is_string() ? obj.items() : Array();
  const Array& seq = obj.is_string() ? chars : *obj.arr;
  int64_t a, b;
  slice_bounds(int64_t(seq.size()), start, stop, step, a, b);
  Array out;
  for (Int128 k = a; step > 0 ? k < b : k > b; k += step) out.push_back(seq[size_t(k)]);
  budget.build_list(out.size(), "slice");
  if (obj.kind == Value::Kind::Array) {
    Value v = Value::array(std::move(out));
    v.is_tuple = obj.is_tuple;
    return v;
  }
  std::string s;
  for (const auto& c : out) s += c.str();
  return Value::string(std::move(s));
}

Value unary_op(const std::string& op, const Value& x, Budget& budget) {
  if (op == "not") return Value::boolean(!x.truthy());
  if (x.kind == Value::Kind::Int || x.kind == Value::Kind::Bool)
    return op == "-" ? int_arith("-", 0, int_value(x), &budget) : make_int(int_value(x), "+", &budget);
  if (x.kind != Value::Kind::Float) bad(budget, std::string("bad operand type for unary ") + op + ": " + kind_name(x.kind));
  return Value::number(op == "-" ? -x.f : x.f);
}

Value binary_op(const std::string& op, const Value& a, const Value& b, Budget& budget) {
  if (op == "==") return Value::boolean(equal(a, b, &budget));
  if (op == "!=") return Value::boolean(!equal(a, b, &budget));
  if (a.is_string() && b.is_string()) budget.work(std::min(a.str().size(), b.str().size()), op.c_str());
  if (op == "<") return Value::boolean(less(a, b));
  if (op == ">") return Value::boolean(less(b, a));
  if (op == "<=") return Value::boolean(!less(b, a));
  if (op == ">=") return Value::boolean(!less(a, b));
  if (op == "in") return Value::boolean(contains(b, a, budget));
  if (op == "not in") return Value::boolean(!contains(b, a, budget));
  if (op == "~") {
    std::string x = to_str(a, &budget), y = to_str(b, &budget);
    budget.build_string(x.size() + y.size(), "~");
    return Value::string(x + y);
  }
  if (op == "+" && a.kind == b.kind && (a.is_string() || a.kind == Value::Kind::Array)) return concat(a, b, budget);
  if (op == "*") {
    const bool a_seq = a.is_string() || a.kind == Value::Kind::Array, b_seq = b.is_string() || b.kind == Value::Kind::Array;
    const bool a_int = a.kind == Value::Kind::Int || a.kind == Value::Kind::Bool;
    const bool b_int = b.kind == Value::Kind::Int || b.kind == Value::Kind::Bool;
    if (a_seq && b_int) return builtin::repeat(a, as_int(b, 0), budget);
    if (b_seq && a_int) return builtin::repeat(b, as_int(a, 0), budget);
  }
  if (op == "%" && a.is_string()) return Value::string(percent_format(a.str(), b, budget));
  if (a.is_number() && b.is_number()) return numeric(op, a, b, budget);
  bad(budget, std::string("unsupported operand types for ") + op + ": " + kind_name(a.kind) + " and " + kind_name(b.kind));
}

}  // namespace brisk::jinja
