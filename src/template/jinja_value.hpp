// The values a chat template computes with, as Jinja2 (a Python library) sees them: undefined,
// none, booleans, integers, floats, strings, lists, dicts that keep insertion order, and
// callables (macros, bound methods, globals). Lists and dicts are shared by reference, as in
// Python, which is what makes `namespace()` objects mutable from inside loops; strings are
// immutable and shared too, so passing a long message around copies nothing. Conversions
// follow Python's str() and repr(), since templates print values with them.
//
// Integers: Python's are unbounded; ours hold every value from INT64_MIN to UINT64_MAX
// exactly (JSON inputs above INT64_MAX print as Python prints them), and arithmetic whose
// exact result leaves that range throws Error(kLimit) naming the operation instead of
// wrapping (jinja_ints.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "template/jinja_limits.hpp"

namespace brisk::jinja {

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Function = std::function<Value(std::vector<Value>& args, Kwargs& kwargs)>;

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, Array, Object, Callable };
  Kind kind = Kind::Undefined;
  bool b = false;
  int64_t i = 0;
  bool u = false;  // Int: the value is uint64_t(i), above INT64_MAX
  double f = 0;
  std::shared_ptr<const std::string> sp;
  std::shared_ptr<Array> arr;
  std::shared_ptr<Object> obj;
  std::shared_ptr<Function> fn;
  bool is_namespace = false;  // an Object whose attributes `set ns.x = ...` may assign
  bool is_tuple = false;      // an Array written (a, b) or made by items(): prints as (a, b)

  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value array(Array v = {});
  static Value object(Object v = {});
  static Value callable(Function f);

  // A String's text (empty for other kinds).
  const std::string& str() const;

  bool defined() const { return kind != Kind::Undefined; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_string() const { return kind == Kind::String; }
  double as_double() const;
  bool truthy() const;

  // Object members: null when absent.
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);  // on an Object, in place

  // Elements for iteration: a list's items, a dict's keys, a string's characters (UTF-8
  // code points), nothing for undefined. Throws for others.
  Array items() const;
  int64_t length() const;
};

const char* kind_name(Value::Kind k);

// Python str(): what {{ value }} prints (undefined prints nothing). With a budget, the text
// of a list or dict is charged to it and stops at its string cap.
std::string to_str(const Value& v, Budget* budget = nullptr);
// Python repr(): how values look inside printed lists and dicts.
std::string to_repr(const Value& v, Budget* budget = nullptr);

// Python json.dumps(v, ensure_ascii=..., indent=..., separators=..., sort_keys=...), as
// transformers' `tojson` filter calls it (ensure_ascii=False by default).
struct JsonStyle {
  int indent = -1;           // < 0: one line; >= 0: pretty-printed (0: newlines, no spaces)
  bool ensure_ascii = false; // \uXXXX for non-ASCII text
  bool sort_keys = false;
  std::optional<std::string> item_sep;  // default ", " on one line, "," when indented
  std::string key_sep = ": ";
};
std::string to_json(const Value& v, const JsonStyle& style = {}, Budget* budget = nullptr);

// Python ==, and a < b for numbers and strings (throws for values Python would not order).
// With a budget, every element compared is charged to it.
bool equal(const Value& a, const Value& b, Budget* budget = nullptr);
bool less(const Value& a, const Value& b);

Value from_json(const nlohmann::ordered_json& j);

// Python's repr of a float: the shortest decimal that reads back to the same double.
std::string float_repr(double v);

}  // namespace brisk::jinja
