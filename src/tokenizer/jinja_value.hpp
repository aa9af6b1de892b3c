// The values a chat template computes with, as Jinja2 (a Python library) sees them: undefined,
// none, booleans, integers, floats, strings, lists, dicts that keep insertion order, and
// callables (macros, bound methods, globals). Lists and dicts are shared by reference, as in
// Python, which is what makes `namespace()` objects mutable from inside loops. Conversions
// follow Python's str() and repr(), since templates print values with them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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
  double f = 0;
  std::string s;
  std::shared_ptr<Array> arr;
  std::shared_ptr<Object> obj;
  std::shared_ptr<Function> fn;
  bool is_namespace = false;  // an Object whose attributes `set ns.x = ...` may assign

  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value array(Array v = {});
  static Value object(Object v = {});
  static Value callable(Function f);

  bool defined() const { return kind != Kind::Undefined; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
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

// Python str(): what {{ value }} prints (undefined prints nothing).
std::string to_str(const Value& v);
// Python repr(): how values look inside printed lists and dicts.
std::string to_repr(const Value& v);
// Python json.dumps(v, ensure_ascii=False) with its default separators, as transformers'
// `tojson` filter calls it; indent > 0 pretty-prints.
std::string to_json(const Value& v, int indent = 0);

bool equal(const Value& a, const Value& b);
// a < b for numbers and strings; throws for values Python would not order.
bool less(const Value& a, const Value& b);

Value from_json(const nlohmann::ordered_json& j);

// Python's repr of a float: the shortest decimal that reads back to the same double.
std::string float_repr(double v);

}  // namespace brisk::jinja
