// What chat templates call besides the language itself: the globals transformers provides
// (range, namespace, raise_exception, strftime_now, dict), Jinja2's filters and tests, the
// Python str/dict methods templates use (strip, split, startswith, items, get, ...),
// attribute and item access, slicing and the binary operators, each with Python's result.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/jinja_value.hpp"

namespace brisk::jinja {

Object global_functions();
Value get_attribute(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
Value binary_op(const std::string& op, const Value& a, const Value& b, int line);
Value apply_filter(const std::string& name, const Value& input, std::vector<Value>& args, Kwargs& kwargs, int line);
bool apply_test(const std::string& name, const Value& input, std::vector<Value>& args, int line);

}  // namespace brisk::jinja
