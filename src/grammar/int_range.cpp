#include "grammar/int_range.hpp"

#include <algorithm>
#include <string>

namespace brisk::grammar {
namespace {

// [a, b], both written with the same number of digits (a <= b).
void same_length(const std::string& a, const std::string& b, DigitPattern prefix, std::vector<DigitPattern>& out) {
  if (a.empty()) return out.push_back(std::move(prefix));
  const size_t rest = a.size() - 1;
  const bool a_low = a.find_first_not_of('0', 1) == std::string::npos;  // a = d00..0
  const bool b_high = b.find_first_not_of('9', 1) == std::string::npos;  // b = d99..9
  auto any_rest = [&](DigitPattern p) {
    p.insert(p.end(), rest, {'0', '9'});
    return p;
  };
  if (a_low && b_high) {  // the whole block of first digits a[0]..b[0]
    prefix.push_back({a[0], b[0]});
    return out.push_back(any_rest(std::move(prefix)));
  }
  if (a[0] == b[0]) {
    prefix.push_back({a[0], a[0]});
    return same_length(a.substr(1), b.substr(1), std::move(prefix), out);
  }
  DigitPattern p = prefix;
  p.push_back({a[0], a[0]});
  same_length(a.substr(1), std::string(rest, '9'), std::move(p), out);
  if (a[0] + 1 <= b[0] - 1) {
    p = prefix;
    p.push_back({char(a[0] + 1), char(b[0] - 1)});
    out.push_back(any_rest(std::move(p)));
  }
  p = prefix;
  p.push_back({b[0], b[0]});
  same_length(std::string(rest, '0'), b.substr(1), std::move(p), out);
}

// [lo, hi] with 0 <= lo <= hi, by digit count.
void non_negative(int64_t lo, int64_t hi, const DigitPattern& sign, std::vector<DigitPattern>& out) {
  int64_t block_end = 9;  // the largest number with lo's digit count
  while (block_end < lo) block_end = block_end * 10 + 9;
  while (lo <= hi) {
    const int64_t end = std::min(hi, block_end);
    same_length(std::to_string(lo), std::to_string(end), sign, out);
    if (end == hi || block_end >= kMaxJsonInteger) break;
    lo = block_end + 1;
    block_end = block_end * 10 + 9;
  }
}

}  // namespace

std::vector<DigitPattern> integer_range_patterns(int64_t lo, int64_t hi) {
  lo = std::clamp(lo, -kMaxJsonInteger, kMaxJsonInteger);
  hi = std::clamp(hi, -kMaxJsonInteger, kMaxJsonInteger);
  std::vector<DigitPattern> out;
  if (lo > hi) return out;
  if (lo < 0) non_negative(std::max<int64_t>(1, -hi), -lo, {{'-', '-'}}, out);
  if (hi >= 0) non_negative(std::max<int64_t>(0, lo), hi, {}, out);
  return out;
}

}  // namespace brisk::grammar
