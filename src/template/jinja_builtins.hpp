// What chat templates call besides the language itself: the globals transformers provides
// (range, namespace, raise_exception, strftime_now, dict), Jinja2's filters and tests, the
// Python str/dict methods templates use (strip, split, startswith, format, items, get, ...),
// attribute and item access, slicing and the binary operators, each with Python's result.
// Every one charges the work it does and the values it builds to the render's Budget.
#pragma once

#include <string>
#include <vector>

#include "template/jinja_value.hpp"

namespace brisk::jinja {

// The global functions of a render. Every namespace() it makes is added to `namespaces`: a
// namespace is the one mutable value, so only it can come to hold itself, and the renderer
// empties them all at the end to free such cycles.
Object global_functions(Budget& budget, std::vector<std::shared_ptr<Object>>* namespaces);
Value get_attribute(const Value& obj, const std::string& name, Budget& budget);
Value get_item(const Value& obj, const Value& key, Budget& budget);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step, Budget& budget);
Value binary_op(const std::string& op, const Value& a, const Value& b, Budget& budget);
Value unary_op(const std::string& op, const Value& x, Budget& budget);
Value apply_filter(const std::string& name, const Value& input, std::vector<Value>& args, Kwargs& kwargs,
                   Budget& budget);
bool apply_test(const std::string& name, const Value& input, std::vector<Value>& args, Budget& budget);

// Shared by the builtins' files.
namespace builtin {

// Argument `name`, or positional `pos`, or undefined.
const Value& arg(const std::vector<Value>& args, const Kwargs& kwargs, size_t pos, const char* name);
// An integer argument (ints, bools, floats truncated), or `fallback` when it is none/undefined.
int64_t as_int(const Value& v, int64_t fallback);
// A string's text, or Error(kInvalidArgument) naming `what`.
const std::string& need_string(const Value& v, const std::string& what, const Budget& budget);
// x repeated n times (n < 1: empty), within the budget.
Value repeat(const Value& x, int64_t n, Budget& budget);

}  // namespace builtin

// Python str methods (jinja_strings.cpp): the bound method `name` of string `s`, or
// undefined when str has no such method.
Value string_method(const Value& s, const std::string& name, Budget& budget);
// Python's `fmt % args` (printf-style) and `fmt.format(*args, **kwargs)` (jinja_format.cpp).
std::string percent_format(const std::string& fmt, const Value& args, Budget& budget);
std::string str_format(const std::string& fmt, const std::vector<Value>& args, const Kwargs& kwargs, Budget& budget);

}  // namespace brisk::jinja
