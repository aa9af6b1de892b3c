// IncrementalDetokenizer: streams text as ids arrive. Bytes of a UTF-8 sequence that is not
// complete yet are held back; bytes that can never become valid are emitted as U+FFFD at once.

#include "tokenizer/tokenizer_impl.hpp"
#include "base/utf8.hpp"

namespace brisk {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tok, bool skip_special)
    : tok_(tok), skip_special_(skip_special) {}

std::string IncrementalDetokenizer::push(int32_t id) {
  std::string bytes = tok_.token_bytes(id);  // throws on an out-of-range id
  if (skip_special_ && tok_.is_special(id)) return {};
  if (first_) {
    first_ = false;
    auto* vt = dynamic_cast<const VocabTokenizer*>(&tok_);
    if (vt && vt->kind() == TokenizerKind::kSpm && vt->add_space_prefix() && !bytes.empty() && bytes[0] == ' ')
      bytes.erase(0, 1);
  }
  pending_ += bytes;
  size_t keep = utf8::incomplete_tail(pending_);
  std::string out = utf8::lossy(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out = utf8::lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace brisk
