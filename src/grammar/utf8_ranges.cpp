#include "grammar/utf8_ranges.hpp"

#include <algorithm>

namespace brisk::grammar {
namespace {

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  static const uint32_t kLast[] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t edge : kLast)
    if (lo <= edge && hi > edge) {
      split(lo, edge, out);
      split(edge + 1, hi, out);
      return;
    }
  const int len = utf8_length(lo);
  if (len > 1)
    for (int i = 1; i < len; ++i) {  // make every continuation byte span a whole range or share a prefix
      const uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) == (hi & ~m)) continue;
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  const std::string a = utf8_encode(lo), b = utf8_encode(hi);
  Utf8Sequence seq;
  for (size_t k = 0; k < a.size(); ++k) seq.push_back({uint8_t(a[k]), uint8_t(b[k])});
  out.push_back(std::move(seq));
}

}  // namespace

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xF0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3F));
    s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

bool utf8_decode(std::string_view t, size_t& pos, uint32_t& cp) {
  const auto c = static_cast<unsigned char>(t[pos]);
  const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 0 || pos + size_t(len) > t.size()) return false;
  cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
  for (int i = 1; i < len; ++i) {
    const auto d = static_cast<unsigned char>(t[pos + size_t(i)]);
    if ((d & 0xC0) != 0x80) return false;
    cp = cp << 6 | (d & 0x3F);
  }
  pos += size_t(len);
  return true;
}

bool parse_hex(std::string_view t, size_t& pos, int digits, uint32_t& value) {
  value = 0;
  for (int i = 0; i < digits; ++i, ++pos) {
    const char c = pos < t.size() ? t[pos] : '\0';
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    value = value * 16 + uint32_t(d);
  }
  return true;
}

std::vector<Utf8Sequence> utf8_sequences(uint32_t lo, uint32_t hi) {
  std::vector<Utf8Sequence> out;
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return out;
  if (lo < 0xD800 && hi > 0xDFFF) {  // around the surrogates
    split(lo, 0xD7FF, out);
    split(0xE000, hi, out);
  } else if (lo >= 0xD800 && hi <= 0xDFFF) {
  } else if (lo >= 0xD800 && lo <= 0xDFFF) {
    split(0xE000, hi, out);
  } else if (hi >= 0xD800 && hi <= 0xDFFF) {
    split(lo, 0xD7FF, out);
  } else {
    split(lo, hi, out);
  }
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> normalize_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                            bool negate) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) continue;
    if (!merged.empty() && lo <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, hi);
    else
      merged.push_back({lo, hi});
  }
  if (!negate) return merged;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t next = 0;
  for (auto [lo, hi] : merged) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

}  // namespace brisk::grammar
