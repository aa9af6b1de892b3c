// Jinja2's filters (`x | name(args)`) and tests (`x is name args`), with Jinja2 3.1's
// arguments and results, each charging what it scans and builds to the render's budget.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "template/jinja_builtins.hpp"
#include "template/jinja_case.hpp"
#include "template/jinja_ints.hpp"
#include "template/jinja_strings.hpp"

namespace brisk::jinja {
namespace {

using builtin::arg;
using builtin::as_int;
using Args = std::vector<Value>;
using K = Value::Kind;

[[noreturn]] void bad(const Budget& b, const std::string& what) { b.fail(ErrorCode::kInvalidArgument, what); }

// `attribute="a.b.0"`: item after item, as Jinja2's make_attrgetter walks it.
Value attribute_path(const Value& v, const Value& attr, Budget& budget) {
  if (attr.kind == K::Int) return get_item(v, attr, budget);
  Value cur = v;
  const std::string path = to_str(attr);
  size_t i = 0;
  while (i <= path.size()) {
    const size_t j = std::min(path.find('.', i), path.size());
    const std::string part = path.substr(i, j - i);
    const bool number = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    cur = get_item(cur, number ? Value::integer(std::atoll(part.substr(0, 18).c_str())) : Value::string(part), budget);
    i = j + 1;
  }
  return cur;
}

Array items_of(const Value& v, Budget& budget) {
  if (v.is_string()) budget.work(v.str().size(), "iteration");
  Array items = v.items();
  budget.items(items.size(), "iteration");
  return items;
}

// min/max/sort/dictsort compare strings ignoring case unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return v.is_string() && !case_sensitive ? Value::string(unicode_lower(v.str())) : v;
}

Value min_max(const Value& v, Args& a, Kwargs& k, Budget& b, bool want_max) {
  const Array items = items_of(v, b);
  if (items.empty()) return Value();
  const bool cs = arg(a, k, 0, "case_sensitive").truthy();
  const Value& attr = arg(a, k, 1, "attribute");
  auto key = [&](const Value& x) { return sort_key(attr.defined() ? attribute_path(x, attr, b) : x, cs); };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value kx = key(items[i]);
    if (want_max ? less(best_key, kx) : less(kx, best_key)) best = i, best_key = std::move(kx);
  }
  return items[best];
}

Value sum(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const Value& attr = arg(a, k, 0, "attribute");
  const Value& start = arg(a, k, 1, "start");
  Value total = start.defined() ? start : Value::integer(0);
  for (const auto& x : items_of(v, b)) total = binary_op("+", total, attr.defined() ? attribute_path(x, attr, b) : x, b);
  return total;
}

Value sorted(const Value& v, Args& a, Kwargs& k, Budget& b) {
  Array items = items_of(v, b);
  const bool rev = arg(a, k, 0, "reverse").truthy(), cs = arg(a, k, 1, "case_sensitive").truthy();
  const Value& attr = arg(a, k, 2, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& x : items) keyed.emplace_back(sort_key(attr.defined() ? attribute_path(x, attr, b) : x, cs), x);
  b.work(keyed.size() * 16, "sort");
  std::stable_sort(keyed.begin(), keyed.end(),
                   [&](const auto& x, const auto& y) { return rev ? less(y.first, x.first) : less(x.first, y.first); });
  Array out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::array(std::move(out));
}

Value dictsort(const Value& v, Args& a, Kwargs& k, Budget& b) {
  if (v.kind != K::Object) bad(b, "dictsort needs a dict");
  const bool cs = arg(a, k, 0, "case_sensitive").truthy(), rev = arg(a, k, 2, "reverse").truthy();
  const Value& by = arg(a, k, 1, "by");
  const bool by_value = by.is_string() && by.str() == "value";
  if (by.defined() && !by_value && !(by.is_string() && by.str() == "key")) bad(b, "dictsort: 'by' must be 'key' or 'value'");
  Array pairs;
  for (const auto& [key, x] : *v.obj) {
    Value p = Value::array({Value::string(key), x});
    p.is_tuple = true;
    pairs.push_back(std::move(p));
  }
  b.work(pairs.size() * 16, "dictsort");
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key((*x.arr)[by_value], cs), ky = sort_key((*y.arr)[by_value], cs);
    return rev ? less(ky, kx) : less(kx, ky);
  });
  return Value::array(std::move(pairs));
}

Value batch(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const int64_t n = as_int(arg(a, k, 0, "linecount"), 0);
  if (n < 1) bad(b, "batch() needs a positive line count");
  const Value& fill = arg(a, k, 1, "fill_with");
  Array out, row;
  for (auto& x : items_of(v, b)) {
    row.push_back(x);
    if (int64_t(row.size()) == n) out.push_back(Value::array(std::move(row))), row.clear();
  }
  if (!row.empty()) {
    if (fill.defined() && fill.kind != K::None) {
      b.build_list(size_t(n), "batch");
      while (int64_t(row.size()) < n) row.push_back(fill);
    }
    out.push_back(Value::array(std::move(row)));
  }
  return Value::array(std::move(out));
}

// Python's round(x, ndigits): correctly rounded through the decimal text, halves to even.
double py_round(double x, int64_t ndigits) {
  if (!std::isfinite(x) || ndigits > 320) return x;
  if (ndigits < 0) {
    const double scale = std::pow(10.0, ndigits < -400 ? 400.0 : double(-ndigits));
    return std::isinf(scale) ? std::copysign(0.0, x) : std::nearbyint(x / scale) * scale;
  }
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*f", int(ndigits), x);
  return std::strtod(buf, nullptr);
}

// Python's round(int, ndigits): an int, halves to even.
Value round_int(Int128 x, int64_t ndigits, Budget& b) {
  if (ndigits >= 0) return make_int(x, "round", &b);
  if (ndigits < -20) return Value::integer(0);  // |x| < 2**64 < 10**20 / 2
  Int128 p = 1;
  for (int64_t k = 0; k < -ndigits; ++k) p *= 10;
  Int128 q = x / p, r = x % p;
  if (r < 0) r += p, q -= 1;  // floor
  if (2 * r > p || (2 * r == p && (q & 1))) q += 1;
  return make_int(q * p, "round", &b);
}

Value round_filter(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const int64_t prec = as_int(arg(a, k, 0, "precision"), 0);
  const Value& m = arg(a, k, 1, "method");
  const std::string method = m.is_string() ? m.str() : "common";
  if (!v.is_number()) bad(b, "round needs a number");
  if (method == "common") {
    if (v.kind != K::Float) return round_int(int_value(v), prec, b);
    return Value::number(py_round(v.as_double(), prec));
  }
  if (method != "ceil" && method != "floor") bad(b, "round: method must be 'common', 'ceil' or 'floor'");
  const double scale = std::pow(10.0, double(std::clamp<int64_t>(prec, -400, 400)));
  const double x = v.as_double() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

// Python's float(text): optional whitespace around a decimal, inf or nan.
bool parse_float(const std::string& text, double* out) {
  const std::string s = py_strip(text, Value(), true, true);
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos) return false;  // strtod's hex floats
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != '_' || (i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                        std::isdigit(static_cast<unsigned char>(s[i + 1]))))
      digits += s[i];
  char* end = nullptr;
  *out = std::strtod(digits.c_str(), &end);
  return end && *end == '\0';
}

// Python's int(text): optional whitespace and sign around decimal digits (and _ between them).
bool parse_int(const std::string& text, Int128* out) {
  const std::string s = py_strip(text, Value(), true, true);
  const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
  std::string digits;
  for (size_t i = sign; i < s.size(); ++i) {
    const bool between_digits = i > sign && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                                std::isdigit(static_cast<unsigned char>(s[i + 1]));
    if (s[i] != '_' || !between_digits) digits += s[i];
  }
  Int128 x = 0;
  if (!parse_digits(digits, &x)) return false;
  *out = sign && s[0] == '-' ? -x : x;
  return true;
}

Value int_filter(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const Value& d = arg(a, k, 0, "default");
  const Value fallback = d.defined() ? d : Value::integer(0);
  if (v.kind == K::Int || v.kind == K::Bool) return make_int(int_value(v), "int", &b);
  if (v.kind == K::Float && std::isnan(v.f)) return fallback;  // Jinja2 catches Python's ValueError
  if (v.kind == K::Float) return make_int(float_to_int(v.f, "int", &b), "int", &b);
  if (!v.is_string()) return fallback;
  Int128 x = 0;
  if (parse_int(v.str(), &x)) return make_int(x, "int", &b);
  double f = 0;
  if (parse_float(v.str(), &f) && !std::isnan(f)) return make_int(float_to_int(f, "int", &b), "int", &b);
  return fallback;
}

Value float_filter(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const Value& d = arg(a, k, 0, "default");
  if (v.is_number()) return Value::number(v.as_double());
  double f = 0;
  if (v.is_string() && parse_float(v.str(), &f)) return Value::number(f);
  return d.defined() ? d : Value::number(0.0);
}

Value truncate(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const std::string s = to_str(v, &b);
  const int64_t length = as_int(arg(a, k, 0, "length"), 255), leeway = as_int(arg(a, k, 3, "leeway"), 5);
  const bool killwords = arg(a, k, 1, "killwords").truthy();
  const Value& end_v = arg(a, k, 2, "end");
  const std::string end = end_v.defined() ? to_str(end_v) : "...";
  const int64_t end_len = int64_t(code_points(end));
  if (length < end_len) bad(b, "truncate: expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (leeway < 0) bad(b, "truncate: expected leeway >= 0, got " + std::to_string(leeway));
  b.work(s.size(), "truncate");
  if (Int128(code_points(s)) <= Int128(length) + leeway) return Value::string(s);
  size_t cut = 0;
  for (int64_t n = 0; n < length - end_len; ++n) cut += std::max<size_t>(1, utf8_len_at(s, cut));
  std::string head = s.substr(0, cut);
  if (!killwords) {
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return Value::string(head + end);
}

Value escape(const Value& v, Budget& b) {
  const std::string s = to_str(v, &b);
  b.build_string(s.size() * 5, "escape");
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::string(std::move(out));
}

// Jinja2's wordcount: runs of word characters (letters, digits, underscore; any non-ASCII
// code point that is not Unicode whitespace or general punctuation counts as a letter).
Value wordcount(const Value& v, Budget& b) {
  const std::string s = to_str(v, &b);
  b.work(s.size(), "wordcount");
  int64_t words = 0;
  bool in_word = false;
  for (size_t p = 0; p < s.size();) {
    uint32_t cp = 0;
    const size_t n = std::max<size_t>(1, utf8_len_at(s, p, &cp));
    const bool word = cp < 0x80 ? (std::isalnum(int(cp)) || cp == '_')
                                : !is_python_space(cp) && !(cp >= 0xA1 && cp <= 0xBF && cp != 0xAA && cp != 0xB5 &&
                                                            cp != 0xBA && cp != 0xB2 && cp != 0xB3 && cp != 0xB9) &&
                                      cp != 0xD7 && cp != 0xF7 && !(cp >= 0x2000 && cp <= 0x206F) &&
                                      !(cp >= 0x3000 && cp <= 0x303F);
    if (word && !in_word) ++words;
    in_word = word;
    p += n;
  }
  return Value::integer(words);
}

Value indent(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const Value& w = arg(a, k, 0, "width");
  const int64_t width = std::max<int64_t>(0, as_int(w, 4));  // Python: ' ' * -1 is ''
  if (!w.is_string()) b.check_string(size_t(width), "indent");
  const std::string pad = w.is_string() ? w.str() : std::string(size_t(width), ' ');
  const bool first = arg(a, k, 1, "first").truthy(), blank = arg(a, k, 2, "blank").truthy();
  const std::string& s = builtin::need_string(v, "filter 'indent'", b);
  size_t lines = 1;
  for (char c : s) lines += c == '\n';
  b.build_string(s.size() + lines * pad.size(), "indent");
  std::string out;
  bool line_start = true, first_line = true;
  for (char c : s) {
    if (line_start) {
      if ((!first_line || first) && (blank || c != '\n')) out += pad;
      line_start = false;
    }
    out += c;
    if (c == '\n') line_start = true, first_line = false;
  }
  return Value::string(std::move(out));
}

Value tojson(const Value& v, Args& a, Kwargs& k, Budget& b) {
  JsonStyle style;
  const Value& ind = arg(a, k, 0, "indent");
  if (ind.kind == K::Int) style.indent = int(std::clamp<int64_t>(as_int(ind, 0), 0, 64));
  else if (ind.is_string()) bad(b, "tojson: a string indent is not supported");
  style.ensure_ascii = arg(a, k, 99, "ensure_ascii").truthy();
  style.sort_keys = arg(a, k, 99, "sort_keys").truthy();
  const Value& sep = arg(a, k, 99, "separators");
  if (sep.kind == K::Array) {
    if (sep.arr->size() != 2 || !(*sep.arr)[0].is_string() || !(*sep.arr)[1].is_string())
      bad(b, "tojson: separators must be two strings");
    style.item_sep = (*sep.arr)[0].str();
    style.key_sep = (*sep.arr)[1].str();
  }
  return Value::string(to_json(v, style, &b));
}

Value map_select(const std::string& name, const Value& v, Args& a, Kwargs& k, Budget& b) {
  Array out;
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  for (const auto& x : items_of(v, b)) {
    if (name == "map") {
      const Value& attr = arg(a, k, 99, "attribute");
      if (attr.defined()) {
        Value y = attribute_path(x, attr, b);
        const Value& d = arg(a, k, 99, "default");
        out.push_back(!y.defined() && d.defined() ? d : y);
      } else {
        if (a.empty()) bad(b, "map() needs a filter name or attribute=");
        Args rest(a.begin() + 1, a.end());
        Kwargs none;
        out.push_back(apply_filter(to_str(a[0]), x, rest, none, b));
      }
      continue;
    }
    const size_t first_test_arg = by_attr ? 1 : 0;
    const Value subject = by_attr ? (a.empty() ? Value() : attribute_path(x, a[0], b)) : x;
    bool ok;
    if (a.size() <= first_test_arg) {
      ok = subject.truthy();
    } else {
      Args targs(a.begin() + int64_t(first_test_arg) + 1, a.end());
      ok = apply_test(to_str(a[first_test_arg]), subject, targs, b);
    }
    if (ok == (name == "select" || name == "selectattr")) out.push_back(x);
  }
  return Value::array(std::move(out));
}

Value default_filter(const Value& v, Args& a, Kwargs& k, Budget&) {
  const bool boolean = arg(a, k, 1, "boolean").truthy();
  if (v.defined() && !(boolean && !v.truthy())) return v;
  const Value& d = arg(a, k, 0, "default_value");
  return d.defined() ? d : Value::string("");
}

Value reverse(const Value& v, Budget& b) {
  Array items = items_of(v, b);
  std::reverse(items.begin(), items.end());
  if (!v.is_string()) return Value::array(std::move(items));
  std::string out;
  for (const auto& c : items) out += c.str();
  return Value::string(std::move(out));
}

Value unique(const Value& v, Args& a, Kwargs& k, Budget& b) {
  const bool cs = arg(a, k, 0, "case_sensitive").truthy();
  Array out, keys;
  for (const auto& x : items_of(v, b)) {
    Value key = sort_key(x, cs);
    if (std::none_of(keys.begin(), keys.end(), [&](const Value& y) { return equal(key, y, &b); }))
      out.push_back(x), keys.push_back(std::move(key));
  }
  return Value::array(std::move(out));
}

Value string_filter(const Value& v, std::string (*f)(std::string_view), Budget& b) {
  const std::string s = to_str(v, &b);
  b.work(s.size() * 2, "case mapping");
  return Value::string(f(s));
}

Value length(const Value& v, Budget& b) {
  b.work(v.str().size(), "length");  // a string's code points are counted
  return Value::integer(v.length());
}

using Filter = Value (*)(const Value& v, Args& a, Kwargs& k, Budget& b);

const std::pair<const char*, Filter> kFilters[] = {
    {"length", [](const Value& v, Args&, Kwargs&, Budget& b) { return length(v, b); }},
    {"count", [](const Value& v, Args&, Kwargs&, Budget& b) { return length(v, b); }},
    {"trim", [](const Value& v, Args& a, Kwargs& k, Budget& b) {
       const std::string s = to_str(v, &b);
       b.work(s.size(), "trim");
       return Value::string(py_strip(s, arg(a, k, 0, "chars"), true, true));
     }},
    {"tojson", tojson},
    {"lower", [](const Value& v, Args&, Kwargs&, Budget& b) { return string_filter(v, unicode_lower, b); }},
    {"upper", [](const Value& v, Args&, Kwargs&, Budget& b) { return string_filter(v, unicode_upper, b); }},
    {"title", [](const Value& v, Args&, Kwargs&, Budget& b) { return string_filter(v, jinja_title, b); }},
    {"capitalize", [](const Value& v, Args&, Kwargs&, Budget& b) { return string_filter(v, unicode_capitalize, b); }},
    {"string", [](const Value& v, Args&, Kwargs&, Budget& b) { return v.is_string() ? v : Value::string(to_str(v, &b)); }},
    {"safe", [](const Value& v, Args&, Kwargs&, Budget&) { return v; }},
    {"e", [](const Value& v, Args&, Kwargs&, Budget& b) { return escape(v, b); }},
    {"escape", [](const Value& v, Args&, Kwargs&, Budget& b) { return escape(v, b); }},
    {"int", int_filter},
    {"float", float_filter},
    {"abs", [](const Value& v, Args&, Kwargs&, Budget& b) {
       if (v.kind == K::Float) return Value::number(std::fabs(v.f));
       if (v.kind != K::Int && v.kind != K::Bool) bad(b, std::string("bad operand type for abs(): ") + kind_name(v.kind));
       const Int128 x = int_value(v);
       return make_int(x < 0 ? -x : x, "abs", &b);
     }},
    {"default", default_filter},
    {"d", default_filter},
    {"list", [](const Value& v, Args&, Kwargs&, Budget& b) { return Value::array(items_of(v, b)); }},
    {"first", [](const Value& v, Args&, Kwargs&, Budget& b) {
       if (v.kind == K::Array) return v.arr->empty() ? Value() : v.arr->front();
       const Array items = items_of(v, b);
       return items.empty() ? Value() : items.front();
     }},
    {"last", [](const Value& v, Args&, Kwargs&, Budget& b) {
       if (v.kind == K::Array) return v.arr->empty() ? Value() : v.arr->back();
       const Array items = items_of(v, b);
       return items.empty() ? Value() : items.back();
     }},
    {"reverse", [](const Value& v, Args&, Kwargs&, Budget& b) { return reverse(v, b); }},
    {"items", [](const Value& v, Args&, Kwargs&, Budget& b) {
       if (v.kind == K::Undefined) return Value::array();
       if (v.kind != K::Object) bad(b, "filter 'items' needs a dict");
       Args none;
       Kwargs nokw;
       return (*get_attribute(v, "items", b).fn)(none, nokw);
     }},
    {"join", [](const Value& v, Args& a, Kwargs& k, Budget& b) {
       const Value& sep = arg(a, k, 0, "d");
       return Value::string(py_join(v, sep.defined() ? to_str(sep, &b) : "", arg(a, k, 1, "attribute"), b, attribute_path));
     }},
    {"replace", [](const Value& v, Args& a, Kwargs& k, Budget& b) {
       const Value &from = arg(a, k, 0, "old"), &to = arg(a, k, 1, "new");
       return Value::string(py_replace(to_str(v, &b), to_str(from), to_str(to), as_int(arg(a, k, 2, "count"), -1), b));
     }},
    {"indent", indent},
    {"map", [](const Value& v, Args& a, Kwargs& k, Budget& b) { return map_select("map", v, a, k, b); }},
    {"select", [](const Value& v, Args& a, Kwargs& k, Budget& b) { return map_select("select", v, a, k, b); }},
    {"reject", [](const Value& v, Args& a, Kwargs& k, Budget& b) { return map_select("reject", v, a, k, b); }},
    {"selectattr", [](const Value& v, Args& a, Kwargs& k, Budget& b) { return map_select("selectattr", v, a, k, b); }},
    {"rejectattr", [](const Value& v, Args& a, Kwargs& k, Budget& b) { return map_select("rejectattr", v, a, k, b); }},
    {"sort", sorted},
    {"dictsort", dictsort},
    {"unique", unique},
    {"round", round_filter},
    {"sum", sum},
    {"min", [](const Value& v, Args& a, Kwargs& k, Budget& b) { return min_max(v, a, k, b, false); }},
    {"max", [](const Value& v, Args& a, Kwargs& k, Budget& b) { return min_max(v, a, k, b, true); }},
    {"batch", batch},
    {"truncate", truncate},
    {"center", [](const Value& v, Args& a, Kwargs& k, Budget& b) {
       return Value::string(py_center(to_str(v, &b), as_int(arg(a, k, 0, "width"), 80), " ", b));
     }},
    {"wordcount", [](const Value& v, Args&, Kwargs&, Budget& b) { return wordcount(v, b); }},
    {"format", [](const Value& v, Args& a, Kwargs& k, Budget& b) {
       Value args = Value::array(a);
       args.is_tuple = true;
       return Value::string(percent_format(builtin::need_string(v, "filter 'format'", b), args, b));
     }},
};

bool sameas(const Value& v, const Value& other) {
  if (v.kind != other.kind) return false;
  if (v.kind == K::Array) return v.arr == other.arr;
  if (v.kind == K::Object) return v.obj == other.obj;
  if (v.kind == K::Callable) return v.fn == other.fn;
  return equal(v, other);
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, Args& args, Kwargs& kwargs, Budget& budget) {
  for (const auto& [n, filter] : kFilters)
    if (name == n) return filter(v, args, kwargs, budget);
  bad(budget, "unknown filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, Args& args, Budget& budget) {
  auto need = [&](size_t n) {
    if (args.size() < n) bad(budget, "test '" + name + "' takes an argument");
  };
  if (name == "defined") return v.defined();
  if (name == "undefined") return !v.defined();
  if (name == "none") return v.kind == K::None;
  if (name == "string") return v.is_string();
  if (name == "number") return v.kind == K::Int || v.kind == K::Float || v.kind == K::Bool;
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "mapping") return v.kind == K::Object;
  if (name == "iterable") return v.kind == K::Array || v.kind == K::Object || v.is_string() || v.kind == K::Undefined;
  if (name == "sequence") return v.kind == K::Array || v.kind == K::Object || v.is_string();
  if (name == "callable") return v.kind == K::Callable;
  if (name == "odd" || name == "even") {
    if (v.kind != K::Int && v.kind != K::Bool) bad(budget, "test '" + name + "' needs an integer");
    return ((int_value(v) % 2 != 0) == (name == "odd"));
  }
  if (name == "divisibleby") {
    need(1);
    const Int128 d = int_value(args[0]);
    if (d == 0) bad(budget, "divisibleby 0");
    return int_value(v) % d == 0;  // 128 bits: INT64_MIN % -1 is an ordinary remainder here
  }
  if (name == "eq" || name == "equalto" || name == "==") return need(1), equal(v, args[0], &budget);
  if (name == "ne" || name == "!=") return need(1), !equal(v, args[0], &budget);
  if (name == "lt" || name == "lessthan" || name == "<") return need(1), less(v, args[0]);
  if (name == "gt" || name == "greaterthan" || name == ">") return need(1), less(args[0], v);
  if (name == "le" || name == "<=") return need(1), !less(args[0], v);
  if (name == "ge" || name == ">=") return need(1), !less(v, args[0]);
  if (name == "in") return need(1), binary_op("in", v, args[0], budget).b;
  if (name == "sameas") return need(1), sameas(v, args[0]);
  if (name == "lower") return v.is_string() && unicode_is_lower(v.str());
  if (name == "upper") return v.is_string() && unicode_is_upper(v.str());
  bad(budget, "unknown test '" + name + "'");
}

}  // namespace brisk::jinja
