// GPT-2's bytes_to_unicode table, built once, and the two directions of the mapping.
// Decoding must be exact: a token string from the vocab turns back into its raw bytes.

#include "tokenizer/byte_unicode.hpp"

#include <array>

#include "base/utf8.hpp"

namespace brisk {
namespace {

struct Tables {
  std::array<std::string, 256> to_uni;
  std::array<int16_t, 324> from_cp;  // code points used are < 0x144
  Tables() {
    from_cp.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      uint32_t cp = keep ? uint32_t(b) : uint32_t(256 + extra++);
      utf8::append(to_uni[b], cp);
      from_cp[cp] = int16_t(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_uni[b]; }

void bytes_to_unicode(std::string_view raw, std::string& out) {
  const auto& t = tables();
  for (unsigned char c : raw) out += t.to_uni[c];
}

bool unicode_to_bytes(std::string_view text, std::string& out) {
  const auto& t = tables();
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t l = utf8::valid_len(text, i, &cp);
    if (!l || cp >= t.from_cp.size() || t.from_cp[cp] < 0) return false;
    out += char(t.from_cp[cp]);
    i += l;
  }
  return true;
}

}  // namespace brisk
