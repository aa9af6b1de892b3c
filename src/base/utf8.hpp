// UTF-8 helpers the tokenizer needs in several places: decoding one code point with validity
// (invalid bytes must never crash the tokenizer and are passed on one at a time), encoding,
// and lossy conversion with U+FFFD for each maximal invalid subpart, as Rust's
// String::from_utf8_lossy (and so HF `tokenizers`) does it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace brisk::utf8 {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there do not form
// one (bad lead byte, bad continuation, overlong, surrogate, > U+10FFFF, truncated).
inline size_t valid_len(std::string_view s, size_t i, uint32_t* cp_out = nullptr) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  unsigned char c = p[i];
  if (c < 0x80) { if (cp_out) *cp_out = c; return 1; }
  size_t len;
  uint32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3; cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4; cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return 0;
  cp = (cp << 6) | (p[i + 1] & 0x3F);
  for (size_t k = 2; k < len; ++k) {
    if (i + k >= n || (p[i + k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i + k] & 0x3F);
  }
  if (cp_out) *cp_out = cp;
  return len;
}

// How many bytes of s[i..] belong to the maximal invalid subpart starting there (>= 1): a lead
// byte followed by as many valid continuation bytes as it allowed before the sequence broke.
inline size_t invalid_len(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  unsigned char c = p[i];
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
  else return 1;
  size_t k = 1;
  if (i + k < n && p[i + k] >= lo && p[i + k] <= hi) {
    ++k;
    while (k < len && i + k < n && (p[i + k] & 0xC0) == 0x80) ++k;
  }
  return k;
}

// True when s ends inside a sequence that further bytes could still complete.
inline size_t incomplete_tail(std::string_view s) {
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    size_t i = n - back;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation: look further back
    if (c < 0xC2 || c > 0xF4) return 0;
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (back >= need) return 0;
    // the bytes present must be a valid prefix
    return invalid_len(s, i) == back ? back : 0;
  }
  return 0;
}

inline void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

inline bool is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t l = valid_len(s, i);
    if (!l) return false;
    i += l;
  }
  return true;
}

inline std::string lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t l = valid_len(s, i);
    if (l) {
      out.append(s.substr(i, l));
      i += l;
    } else {
      out.append(kReplacement);
      i += invalid_len(s, i);
    }
  }
  return out;
}

}  // namespace brisk::utf8
