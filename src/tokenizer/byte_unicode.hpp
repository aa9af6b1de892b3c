// The GPT-2 byte <-> unicode map that byte-level BPE vocabularies are written in: every byte
// gets a printable code point (printable Latin-1 maps to itself, the rest to U+0100 and up),
// so that vocab entries are valid strings. "Ġ" is a space, "Ċ" a newline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace brisk {

// The UTF-8 text of the code point byte b maps to.
const std::string& byte_to_unicode(uint8_t b);
// Appends the byte-level form of raw bytes.
void bytes_to_unicode(std::string_view raw, std::string& out);
// Maps a vocab string back to raw bytes; false when a char is outside the map.
bool unicode_to_bytes(std::string_view text, std::string& out);

}  // namespace brisk
