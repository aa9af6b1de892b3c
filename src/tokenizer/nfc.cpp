// NFC over UTF-8 with invalid bytes kept as they are (they break a composition run).
// Tables are sorted by code point at build time, so lookups are binary searches.

#include "tokenizer/nfc.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/utf8.hpp"

namespace brisk {
namespace {

#include "tokenizer/nfc_data.inc"

constexpr uint32_t SBase = 0xAC00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11A7;
constexpr uint32_t LCount = 19, VCount = 21, TCount = 28, NCount = VCount * TCount, SCount = LCount * NCount;
constexpr uint32_t kInvalid = 0x80000000u;  // marks a raw invalid byte (low 8 bits)

uint8_t ccc_of(uint32_t cp) {
  if (cp < 0x300 || cp & kInvalid) return 0;
  auto it = std::lower_bound(std::begin(kCcc), std::end(kCcc), cp,
                             [](const uint32_t (&e)[2], uint32_t v) { return e[0] < v; });
  return it != std::end(kCcc) && (*it)[0] == cp ? uint8_t((*it)[1]) : 0;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= SBase && cp < SBase + SCount) {
    uint32_t s = cp - SBase;
    out.push_back(LBase + s / NCount);
    out.push_back(VBase + (s % NCount) / TCount);
    if (s % TCount) out.push_back(TBase + s % TCount);
    return;
  }
  if (cp >= 0xC0 && !(cp & kInvalid)) {
    auto it = std::lower_bound(std::begin(kDecomp), std::end(kDecomp), cp,
                               [](const uint32_t (&e)[3], uint32_t v) { return e[0] < v; });
    if (it != std::end(kDecomp) && (*it)[0] == cp) {
      decompose((*it)[1], out);
      if ((*it)[2]) decompose((*it)[2], out);
      return;
    }
  }
  out.push_back(cp);
}

struct CompTable {
  std::vector<std::pair<uint64_t, uint32_t>> v;
  CompTable() {
    for (auto& e : kComp) v.emplace_back((uint64_t(e[0]) << 32) | e[1], e[2]);
    std::sort(v.begin(), v.end());
  }
};

uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= LBase && a < LBase + LCount && b >= VBase && b < VBase + VCount)
    return SBase + ((a - LBase) * VCount + (b - VBase)) * TCount;
  if (a >= SBase && a < SBase + SCount && (a - SBase) % TCount == 0 && b > TBase && b < TBase + TCount)
    return a + (b - TBase);
  static const CompTable t;
  uint64_t key = (uint64_t(a) << 32) | b;
  auto it = std::lower_bound(t.v.begin(), t.v.end(), std::make_pair(key, uint32_t(0)));
  return it != t.v.end() && it->first == key ? it->second : 0;
}

}  // namespace

bool is_nfc_quick(std::string_view text) {
  for (unsigned char c : text)
    if (c >= 0xCC) return false;  // lead bytes of U+0300 and up
  return true;
}

std::string nfc(std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp;
    size_t l = utf8::valid_len(text, i, &cp);
    if (l) {
      decompose(cp, cps);
      i += l;
    } else {
      cps.push_back(kInvalid | uint8_t(text[i]));
      ++i;
    }
  }
  // canonical ordering: stable sort of each run of non-starters by class
  for (size_t i = 0; i < cps.size();) {
    if (ccc_of(cps[i]) == 0) { ++i; continue; }
    size_t j = i;
    while (j < cps.size() && ccc_of(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j, [](uint32_t a, uint32_t b) { return ccc_of(a) < ccc_of(b); });
    i = j;
  }
  // canonical composition
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  int64_t starter = -1;
  int last_ccc = -1;
  for (uint32_t cp : cps) {
    int c = ccc_of(cp);
    if (starter >= 0 && !(cp & kInvalid)) {
      bool blocked = last_ccc != -1 && (last_ccc == 0 || last_ccc >= c);
      if (!blocked || (last_ccc == -1)) {
        if (uint32_t m = compose(out[starter], cp)) {
          out[starter] = m;
          continue;
        }
      }
    }
    if (c == 0) {
      starter = (cp & kInvalid) ? -1 : int64_t(out.size());
      last_ccc = -1;
    } else {
      last_ccc = c;
    }
    out.push_back(cp);
  }
  std::string s;
  s.reserve(text.size());
  for (uint32_t cp : out) {
    if (cp & kInvalid) s += char(cp & 0xFF);
    else utf8::append(s, cp);
  }
  return s;
}

}  // namespace brisk
