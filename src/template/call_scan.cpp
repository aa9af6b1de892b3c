#include "template/call_scan.hpp"

#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

namespace brisk {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// The end of the string starting at s[i] == '"'.
size_t scan_string(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
    else if (static_cast<unsigned char>(s[i]) < 0x20) return kBad;
  }
  return kNeedMore;
}

// Objects and arrays: brackets matched, strings skipped; their inside is checked only as far
// as brackets go (the arguments are passed on as written).
size_t scan_nested(std::string_view s, size_t i) {
  std::vector<char> open;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      const size_t e = scan_string(s, i);
      if (e == kNeedMore || e == kBad) return e;
      i = e - 1;
    } else if (c == '{' || c == '[') {
      if (open.size() >= 256) return kBad;
      open.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (open.empty() || open.back() != c) return kBad;
      open.pop_back();
      if (open.empty()) return i + 1;
    }
  }
  return kNeedMore;
}

std::optional<std::string> decode_string(std::string_view s) {
  try {
    return nlohmann::json::parse(s).get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

size_t scan_json_value(std::string_view s, size_t i, bool final) {
  if (i >= s.size()) return kNeedMore;
  const char c = s[i];
  if (c == '"') return scan_string(s, i);
  if (c == '{' || c == '[') return scan_nested(s, i);
  // A number or a literal: it ends at the first character that cannot be part of one.
  size_t e = i;
  while (e < s.size() && (std::strchr("+-.eE", s[e]) || (s[e] >= '0' && s[e] <= '9') || (s[e] >= 'a' && s[e] <= 'z')))
    ++e;
  if (e == i) return kBad;
  if (e == s.size() && !final) return kNeedMore;
  return nlohmann::json::accept(s.substr(i, e - i)) ? e : kBad;
}

CallScan scan_call(std::string_view s, bool final) {
  CallScan r;
  auto stop = [&](size_t at) {
    r.status = at == kBad || final ? CallScan::Status::kInvalid : CallScan::Status::kIncomplete;
    return r;
  };
  if (s.empty() || s[0] != '{') return stop(s.empty() ? kNeedMore : kBad);
  size_t i = 1;
  for (bool first = true;; first = false) {
    i = skip_space(s, i);
    if (i >= s.size()) return stop(kNeedMore);
    if (s[i] == '}' && first) return stop(kBad);  // {} names no function
    if (s[i] == '}') {
      r.end = i + 1;
      r.status = r.name ? CallScan::Status::kComplete : CallScan::Status::kInvalid;
      return r;
    }
    if (!first) {
      if (s[i] != ',') return stop(kBad);
      i = skip_space(s, i + 1);
      if (i >= s.size()) return stop(kNeedMore);
    }
    if (s[i] != '"') return stop(kBad);
    const size_t key_end = scan_string(s, i);
    if (key_end == kNeedMore || key_end == kBad) return stop(key_end);
    const std::optional<std::string> key = decode_string(s.substr(i, key_end - i));
    i = skip_space(s, key_end);
    if (i >= s.size()) return stop(kNeedMore);
    if (s[i] != ':' || !key) return stop(kBad);
    i = skip_space(s, i + 1);
    if (i >= s.size()) return stop(kNeedMore);
    const bool args = *key == "arguments" || *key == "parameters";
    if (args) r.args_begin = i, r.args_is_object = s[i] == '{';
    const size_t v_end = scan_json_value(s, i, final);
    if (v_end == kNeedMore || v_end == kBad) return stop(v_end);
    if (args) r.args_end = v_end;
    if (*key == "name") {
      if (s[i] != '"') return stop(kBad);
      r.name = decode_string(s.substr(i, v_end - i));
    }
    i = v_end;
  }
}

}  // namespace brisk
