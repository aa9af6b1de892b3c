// The shared body of every tokenizer: tables built once at load (vocab map, merge table by
// symbol ids, added-token trie, byte tokens), the encode loop (added tokens, then the model on
// each plain segment, then the post-processor's ids) and HF-compatible decoding.

#include <cstdio>

#include "base/error.hpp"
#include "tokenizer/byte_unicode.hpp"
#include "tokenizer/tokenizer_impl.hpp"
#include "base/utf8.hpp"

namespace brisk {

const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// "<0xAB>" -> 0xAB, else -1
int parse_byte_token(const std::string& t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                       : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  int h = hex(t[3]), l = hex(t[4]);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁"

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  s.swap(out);
}

}  // namespace

VocabTokenizer::VocabTokenizer(TokenizerSpec spec) : spec_(std::move(spec)) {
  const size_t n = spec_.tokens.size();
  if (n == 0) throw Error(ErrorCode::kFormat, "tokenizer has an empty vocabulary", spec_.where);
  if (n > (1u << 30)) throw Error(ErrorCode::kLimit, "tokenizer vocabulary too large", spec_.where);
  spec_.types.resize(n, kNormal);
  special_.assign(n, 0);
  added_.assign(n, 0);
  byte_of_.assign(n, -1);
  for (auto& b : byte_id_) b = -1;
  vocab_.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    vocab_.emplace(spec_.tokens[i], int32_t(i));  // first id wins on duplicates
    uint8_t t = spec_.types[i];
    if (t == kControl || t == kUnknown) special_[i] = 1;
    if (spec_.kind == TokenizerKind::kSpm) {
      int b = parse_byte_token(spec_.tokens[i]);
      if (b >= 0 && (t == kByte || t == kNormal || t == kUnused)) {
        byte_of_[i] = int16_t(b);
        if (byte_id_[b] < 0) byte_id_[b] = int32_t(i);
      }
    }
  }
  if (spec_.kind == TokenizerKind::kByteLevel) {
    for (int b = 0; b < 256; ++b) {
      auto it = vocab_.find(byte_to_unicode(uint8_t(b)));
      if (it != vocab_.end()) byte_id_[b] = it->second;
    }
  }
  check_byte_tokens();
  for (auto& a : spec_.added) {
    if (a.id < 0 || size_t(a.id) >= n)
      throw Error(ErrorCode::kFormat, "added token id " + std::to_string(a.id) + " out of range", spec_.where);
    added_[a.id] = 1;
    special_[a.id] = a.special ? 1 : 0;
    matcher_.add(a);
  }
  int32_t rank = 0;
  for (auto& [l, r] : spec_.merges) {
    auto li = vocab_.find(l), ri = vocab_.find(r);
    std::string m = l + r;
    auto mi = vocab_.find(m);
    if (li != vocab_.end() && ri != vocab_.end() && mi != vocab_.end())
      merges_.add(li->second, ri->second, rank, mi->second);
    ++rank;
  }
  for (auto& re : spec_.split_regexes) regexes_.push_back(std::make_unique<SplitRegex>(re));
  check_special_ids();
  bos_id_ = spec_.bos_id;
  for (int32_t id : spec_.eos_ids) add_eos_id(id);
}

// A byte-level vocabulary needs a token for each of the 256 bytes, and SentencePiece byte
// fallback the 256 <0xNN> tokens: without them some text cannot be encoded at all, which would
// surface as a failed request long after the model was reported ready.
void VocabTokenizer::check_byte_tokens() const {
  const bool byte_level = spec_.kind == TokenizerKind::kByteLevel;
  if (!byte_level && !spec_.byte_fallback) return;
  int missing = 0, first = -1;
  for (int b = 0; b < 256; ++b)
    if (byte_id_[b] < 0 && missing++ == 0) first = b;
  if (missing == 0) return;
  char hex[8];
  std::snprintf(hex, sizeof hex, "%02X", first);
  const std::string token = byte_level ? "'" + byte_to_unicode(uint8_t(first)) + "'" : std::string("<0x") + hex + ">";
  throw Error(ErrorCode::kFormat,
              (spec_.vocab_key.empty() ? std::string("vocabulary") : spec_.vocab_key) + " lacks " +
                  std::to_string(missing) + " of the 256 byte tokens" + (byte_level ? "" : " that byte fallback needs") +
                  ", the first for byte 0x" + hex + " (" + token + ")",
              spec_.where);
}

// Ids the loaders resolved (post-processor, bos, unk, eos) must be tokens of the vocabulary.
void VocabTokenizer::check_special_ids() const {
  auto check = [&](const char* what, int32_t id) {
    if (id < 0 || id >= vocab_size())
      throw Error(ErrorCode::kFormat, std::string(what) + " id " + std::to_string(id) + " is outside the vocabulary of " +
                                          std::to_string(vocab_size()) + " tokens", spec_.where);
  };
  for (int32_t id : spec_.prefix_ids) check("post-processor prefix token", id);
  for (int32_t id : spec_.suffix_ids) check("post-processor suffix token", id);
  for (int32_t id : spec_.eos_ids) check("end-of-generation token", id);
  if (spec_.bos_id >= 0) check("bos token", spec_.bos_id);
  if (spec_.unk_id >= 0) check("unk token", spec_.unk_id);
}

void VocabTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw Error(ErrorCode::kInvalidArgument,
                "token id " + std::to_string(id) + " is outside the vocabulary (size " +
                    std::to_string(vocab_size()) + ")");
}

bool VocabTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && special_[id];
}

const std::string& VocabTokenizer::token_text(int32_t id) const {
  check_id(id);
  return spec_.tokens[id];
}

int32_t VocabTokenizer::find_token(std::string_view text) const {
  auto it = vocab_.find(text);
  return it == vocab_.end() ? -1 : it->second;
}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special) out = spec_.prefix_ids;
  std::vector<AddedTokenMatcher::Piece> pieces;
  matcher_.split(text, parse_special, pieces);
  for (auto& p : pieces) {
    if (p.id >= 0) out.push_back(p.id);
    else encode_segment(p.text, p.text.data() == text.data(), out);
  }
  if (add_special) out.insert(out.end(), spec_.suffix_ids.begin(), spec_.suffix_ids.end());
  return out;
}

void VocabTokenizer::encode_segment(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  if (spec_.kind == TokenizerKind::kByteLevel) encode_bytelevel(text, out);
  else encode_spm(text, at_start, out);
}

std::string VocabTokenizer::token_bytes(int32_t id) const {
  check_id(id);
  const std::string& t = spec_.tokens[id];
  if (added_[id] || special_[id]) return t;
  if (spec_.kind == TokenizerKind::kByteLevel) {
    std::string raw;
    return unicode_to_bytes(t, raw) ? raw : t;
  }
  if (byte_of_[id] >= 0) return std::string(1, char(byte_of_[id]));
  std::string s = t;
  replace_all(s, kSpace, " ");
  return s;
}

std::string VocabTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  for (int32_t id : ids) check_id(id);
  std::string out;
  if (spec_.kind == TokenizerKind::kByteLevel) {
    // ByteLevel decoder: bytes of every token, then one lossy UTF-8 conversion.
    std::string raw;
    for (int32_t id : ids) {
      if (skip_special && special_[id]) continue;
      const std::string& t = spec_.tokens[id];
      if (added_[id] || !unicode_to_bytes(t, raw)) raw += t;
    }
    return utf8::lossy(raw);
  }
  // Replace("▁", " ") + ByteFallback (a run of <0xNN> that is not valid UTF-8 gives one
  // U+FFFD per byte) + Fuse; Strip(' ', 1, 0) when the model adds a space prefix.
  std::string bytes;
  auto flush = [&] {
    if (bytes.empty()) return;
    if (utf8::is_valid(bytes)) out += bytes;
    else for (size_t k = 0; k < bytes.size(); ++k) out += utf8::kReplacement;
    bytes.clear();
  };
  bool first = true;
  for (int32_t id : ids) {
    if (skip_special && special_[id]) continue;
    if (byte_of_[id] >= 0 && !added_[id]) {
      bytes += char(byte_of_[id]);
      first = false;
      continue;
    }
    flush();
    std::string s = spec_.tokens[id];
    replace_all(s, kSpace, " ");
    if (first && spec_.add_space_prefix && !s.empty() && s[0] == ' ') s.erase(0, 1);
    first = false;
    out += s;
  }
  flush();
  return out;
}

void VocabTokenizer::push_bytes_fallback(std::string_view piece, std::vector<int32_t>& out) const {
  bool all = spec_.byte_fallback;
  if (all)
    for (unsigned char c : piece)
      if (byte_id_[c] < 0) { all = false; break; }
  if (all) {
    for (unsigned char c : piece) out.push_back(byte_id_[c]);
    return;
  }
  if (spec_.unk_id < 0)
    throw Error(ErrorCode::kInvalidArgument, "text has a character the vocabulary cannot encode", spec_.where);
  if (spec_.fuse_unk && !out.empty() && out.back() == spec_.unk_id) return;
  out.push_back(spec_.unk_id);
}

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerSpec spec) {
  return std::make_unique<VocabTokenizer>(std::move(spec));
}

}  // namespace brisk
