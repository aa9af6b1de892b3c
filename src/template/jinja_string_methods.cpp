// The str methods a template can call on a string value (`content.strip()`, `'{}'.format(x)`),
// as bound callables over the shared string.
#include <algorithm>
#include <cctype>

#include "template/jinja_builtins.hpp"
#include "template/jinja_case.hpp"
#include "template/jinja_strings.hpp"

namespace brisk::jinja {
namespace {

using builtin::arg;
using builtin::as_int;
using Args = std::vector<Value>;

bool affix(const std::string& s, const Value& what, bool prefix, Budget& budget) {
  auto one = [&](const std::string& p) {
    budget.work(p.size(), prefix ? "startswith" : "endswith");
    return p.size() <= s.size() &&
           (prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  if (what.is_string()) return one(what.str());
  if (what.kind == Value::Kind::Array) {
    for (const auto& p : *what.arr)
      if (p.is_string() && one(p.str())) return true;
    return false;
  }
  budget.fail(ErrorCode::kInvalidArgument, std::string(prefix ? "startswith" : "endswith") + "() takes a string");
}

// str.find / rfind / count: positions in code points.
Value search(const std::string& s, const std::string& name, const Value& sub, Budget& budget) {
  if (!sub.is_string()) budget.fail(ErrorCode::kInvalidArgument, name + "() takes a string");
  budget.work(s.size(), "find");
  const std::string& t = sub.str();
  if (name == "count") {
    if (t.empty()) return Value::integer(int64_t(code_points(s)) + 1);
    int64_t n = 0;
    for (size_t i = s.find(t); i != std::string::npos; i = s.find(t, i + t.size())) ++n;
    return Value::integer(n);
  }
  const size_t at = name == "find" ? s.find(t) : s.rfind(t);
  return Value::integer(at == std::string::npos ? -1 : int64_t(code_points(std::string_view(s).substr(0, at))));
}

// str.isdigit() and friends, over ASCII (other characters answer false).
bool char_class(const std::string& s, const std::string& name) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    if (name == "isdigit") return std::isdigit(c) != 0;
    if (name == "isalpha") return std::isalpha(c) != 0;
    if (name == "isalnum") return std::isalnum(c) != 0;
    return std::isspace(c) != 0;
  });
}

using Method = Value (*)(const Value& self, Args& a, Kwargs& k, Budget& b);

Value strip_m(const Value& self, Args& a, Kwargs& k, Budget& b, bool left, bool right) {
  b.work(self.str().size(), "strip");
  return Value::string(py_strip(self.str(), arg(a, k, 0, "chars"), left, right));
}

Value case_m(const Value& self, std::string (*f)(std::string_view), Budget& b) {
  b.work(self.str().size() * 2, "case mapping");
  return Value::string(f(self.str()));
}

const std::pair<const char*, Method> kMethods[] = {
    {"strip", [](const Value& s, Args& a, Kwargs& k, Budget& b) { return strip_m(s, a, k, b, true, true); }},
    {"lstrip", [](const Value& s, Args& a, Kwargs& k, Budget& b) { return strip_m(s, a, k, b, true, false); }},
    {"rstrip", [](const Value& s, Args& a, Kwargs& k, Budget& b) { return strip_m(s, a, k, b, false, true); }},
    {"split", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       return Value::array(py_split(s.str(), arg(a, k, 0, "sep"), as_int(arg(a, k, 1, "maxsplit"), -1), false, b));
     }},
    {"rsplit", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       return Value::array(py_split(s.str(), arg(a, k, 0, "sep"), as_int(arg(a, k, 1, "maxsplit"), -1), true, b));
     }},
    {"splitlines", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       return Value::array(py_splitlines(s.str(), arg(a, k, 0, "keepends").truthy(), b));
     }},
    {"startswith", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       return Value::boolean(affix(s.str(), arg(a, k, 0, "prefix"), true, b));
     }},
    {"endswith", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       return Value::boolean(affix(s.str(), arg(a, k, 0, "suffix"), false, b));
     }},
    {"upper", [](const Value& s, Args&, Kwargs&, Budget& b) { return case_m(s, unicode_upper, b); }},
    {"lower", [](const Value& s, Args&, Kwargs&, Budget& b) { return case_m(s, unicode_lower, b); }},
    {"title", [](const Value& s, Args&, Kwargs&, Budget& b) { return case_m(s, unicode_title, b); }},
    {"capitalize", [](const Value& s, Args&, Kwargs&, Budget& b) { return case_m(s, unicode_capitalize, b); }},
    {"islower", [](const Value& s, Args&, Kwargs&, Budget&) { return Value::boolean(unicode_is_lower(s.str())); }},
    {"isupper", [](const Value& s, Args&, Kwargs&, Budget&) { return Value::boolean(unicode_is_upper(s.str())); }},
    {"isdigit", [](const Value& s, Args&, Kwargs&, Budget&) { return Value::boolean(char_class(s.str(), "isdigit")); }},
    {"isalpha", [](const Value& s, Args&, Kwargs&, Budget&) { return Value::boolean(char_class(s.str(), "isalpha")); }},
    {"isalnum", [](const Value& s, Args&, Kwargs&, Budget&) { return Value::boolean(char_class(s.str(), "isalnum")); }},
    {"isspace", [](const Value& s, Args&, Kwargs&, Budget&) { return Value::boolean(char_class(s.str(), "isspace")); }},
    {"replace", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       const Value &from = arg(a, k, 0, "old"), &to = arg(a, k, 1, "new");
       if (!from.is_string() || !to.is_string()) b.fail(ErrorCode::kInvalidArgument, "replace() takes two strings");
       return Value::string(py_replace(s.str(), from.str(), to.str(), as_int(arg(a, k, 2, "count"), -1), b));
     }},
    {"find", [](const Value& s, Args& a, Kwargs& k, Budget& b) { return search(s.str(), "find", arg(a, k, 0, "sub"), b); }},
    {"rfind", [](const Value& s, Args& a, Kwargs& k, Budget& b) { return search(s.str(), "rfind", arg(a, k, 0, "sub"), b); }},
    {"count", [](const Value& s, Args& a, Kwargs& k, Budget& b) { return search(s.str(), "count", arg(a, k, 0, "sub"), b); }},
    {"join", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       return Value::string(py_join(arg(a, k, 0, "iterable"), s.str(), Value(), b, nullptr));
     }},
    {"center", [](const Value& s, Args& a, Kwargs& k, Budget& b) {
       const Value& fill = arg(a, k, 1, "fillchar");
       return Value::string(py_center(s.str(), as_int(arg(a, k, 0, "width"), 0), fill.is_string() ? fill.str() : " ", b));
     }},
    {"format", [](const Value& s, Args& a, Kwargs& k, Budget& b) { return Value::string(str_format(s.str(), a, k, b)); }},
};

}  // namespace

Value string_method(const Value& s, const std::string& name, Budget& budget) {
  for (const auto& entry : kMethods)
    if (name == entry.first) {
      Budget* b = &budget;
      const Method method = entry.second;  // clang 15 cannot capture a structured binding
      return Value::callable([s, method, b](Args& a, Kwargs& k) { return method(s, a, k, *b); });
    }
  return Value();
}

}  // namespace brisk::jinja
