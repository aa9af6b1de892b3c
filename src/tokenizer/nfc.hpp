// Unicode NFC, the normalizer Qwen2's tokenizer.json declares. PCRE2 does not normalize, so
// this does: canonical decomposition, canonical ordering, canonical composition (Hangul by
// formula). Tables (nfc_data.inc) come from tools/make_nfc_table.py, pinned to Unicode 9.0.0 as
// Hugging Face tokenizers has it; invalid bytes pass through.
#pragma once

#include <string>
#include <string_view>

namespace brisk {

// True when the text certainly is NFC already (every code point below U+0300): the common case.
bool is_nfc_quick(std::string_view text);
std::string nfc(std::string_view text);

}  // namespace brisk
