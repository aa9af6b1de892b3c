// GGUF tokenizer.ggml.* metadata -> TokenizerSpec. "gpt2" is byte-level BPE with its merges
// and a pre-tokenizer regex chosen by tokenizer.ggml.pre; "llama" is SentencePiece-style,
// merged by score. Token types mark control (special) and user-defined (matched in text).

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "tokenizer/tokenizer_impl.hpp"
#include "tokenizer/tokenizer_loaders.hpp"

namespace brisk {
namespace {

const std::vector<std::string>& strs(const CheckpointIndex& c, const std::string& key, bool required) {
  static const std::vector<std::string> none;
  const MetaValue* v = c.meta(key);
  if (!v) {
    if (required) throw Error(ErrorCode::kFormat, "GGUF lacks " + key, c.path);
    return none;
  }
  if (!v->is_array() || v->elem_type != MetaType::String)
    throw Error(ErrorCode::kFormat, key + " is not an array of strings", c.path);
  return v->strs;
}

const std::vector<double>* nums(const CheckpointIndex& c, const std::string& key) {
  const MetaValue* v = c.meta(key);
  if (!v) return nullptr;
  if (!v->is_array() || v->elem_type == MetaType::String || v->elem_type == MetaType::Array)
    throw Error(ErrorCode::kFormat, key + " is not an array of numbers", c.path);
  return &v->nums;
}

// A special-token id (tokenizer.ggml.bos_token_id, ...): -1 when absent, an error when it is
// not a token of the vocabulary (llama.cpp warns and falls back; a wrong BOS or EOS silently
// changes every prompt or never stops a generation, so brisk refuses the file).
int32_t special_id(const CheckpointIndex& c, const std::string& key, int32_t n) {
  const MetaValue* v = c.meta(key);
  if (!v) return -1;
  const bool integral = !v->is_array() && v->is_number() && v->type != MetaType::F32 && v->type != MetaType::F64;
  if (!integral) throw Error(ErrorCode::kFormat, key + " is not an integer token id", c.path);
  const bool huge = v->type == MetaType::U64 && v->u > uint64_t(INT64_MAX);
  if (huge) throw Error(ErrorCode::kFormat, key + " = " + std::to_string(v->u) + ": not a token id", c.path);
  check_token_id(key, v->as_i64(), n, c.path);
  return int32_t(v->as_i64());
}

// Every tokenizer.ggml.*_token_id key, including ones brisk does not use (sep, cls, mask):
// all must name tokens of the vocabulary.
void check_all_special_ids(const CheckpointIndex& c, int32_t n) {
  const std::string prefix = "tokenizer.ggml.", suffix = "_token_id";
  for (const auto& [key, v] : c.metadata)
    if (key.size() > prefix.size() + suffix.size() && key.compare(0, prefix.size(), prefix) == 0 &&
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
      special_id(c, key, n);
}

bool bool_or(const CheckpointIndex& c, const std::string& key, bool dflt) {
  const MetaValue* v = c.meta(key);
  return v ? v->as_i64() != 0 : dflt;
}

// bos / eos / unk ids, what add_special puts around a text, and every end-of-generation id.
void apply_special_ids(const CheckpointIndex& ckpt, int32_t n, TokenizerSpec& spec) {
  check_all_special_ids(ckpt, n);
  spec.unk_id = special_id(ckpt, "tokenizer.ggml.unknown_token_id", n);
  spec.bos_id = special_id(ckpt, "tokenizer.ggml.bos_token_id", n);
  int32_t eos = special_id(ckpt, "tokenizer.ggml.eos_token_id", n);
  bool add_bos = bool_or(ckpt, "tokenizer.ggml.add_bos_token", spec.kind == TokenizerKind::kSpm);
  bool add_eos = bool_or(ckpt, "tokenizer.ggml.add_eos_token", false);
  if (add_bos && spec.bos_id < 0 && ckpt.meta("tokenizer.ggml.add_bos_token"))
    throw Error(ErrorCode::kFormat, "tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing",
                ckpt.path);
  if (add_eos && eos < 0)
    throw Error(ErrorCode::kFormat, "tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is missing",
                ckpt.path);
  if (add_bos && spec.bos_id >= 0) spec.prefix_ids.push_back(spec.bos_id);
  if (add_eos) spec.suffix_ids.push_back(eos);
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (int32_t id = special_id(ckpt, key, n); id >= 0) spec.eos_ids.push_back(id);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_gguf(const CheckpointIndex& ckpt) {
  const MetaValue* model = ckpt.meta("tokenizer.ggml.model");
  if (!model) throw Error(ErrorCode::kFormat, "GGUF has no tokenizer (tokenizer.ggml.model missing)", ckpt.path);
  const std::string& kind = model->as_string();
  TokenizerSpec spec;
  spec.where = ckpt.path;
  spec.vocab_key = "tokenizer.ggml.tokens";
  if (kind == "gpt2") spec.kind = TokenizerKind::kByteLevel;
  else if (kind == "llama") spec.kind = TokenizerKind::kSpm;
  else throw Error(ErrorCode::kUnsupported, "tokenizer.ggml.model \"" + kind + "\" is not supported (gpt2, llama)", ckpt.path);

  spec.tokens = strs(ckpt, "tokenizer.ggml.tokens", true);
  const int32_t n = int32_t(spec.tokens.size());
  if (const auto* t = nums(ckpt, "tokenizer.ggml.token_type")) {
    if (int32_t(t->size()) != n) throw Error(ErrorCode::kFormat, "token_type count differs from tokens", ckpt.path);
    spec.types.reserve(n);
    for (double x : *t) spec.types.push_back(x >= 1 && x <= 6 ? uint8_t(x) : uint8_t(kNormal));
  } else {
    spec.types.assign(n, kNormal);
  }
  if (const auto* s = nums(ckpt, "tokenizer.ggml.scores")) {
    if (int32_t(s->size()) != n) throw Error(ErrorCode::kFormat, "scores count differs from tokens", ckpt.path);
    spec.scores.assign(s->begin(), s->end());
  }
  for (const std::string& m : strs(ckpt, "tokenizer.ggml.merges", false)) {
    size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) throw Error(ErrorCode::kFormat, "merge without a space: " + m, ckpt.path);
    spec.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }

  if (spec.kind == TokenizerKind::kByteLevel) {
    if (spec.merges.empty()) throw Error(ErrorCode::kFormat, "gpt2 tokenizer without merges", ckpt.path);
    const MetaValue* pre = ckpt.meta("tokenizer.ggml.pre");
    std::string p = pre ? pre->as_string() : "default";
    if (p == "qwen2" || p == "deepseek-r1-qwen") {
      spec.split_regexes.push_back(kQwen2Regex);
      spec.nfc = true;  // Qwen2's tokenizer.json normalizer
    } else if (p == "llama-bpe" || p == "llama3" || p == "llama-v3" || p == "smaug-bpe") {
      spec.split_regexes.push_back(kLlama3Regex);
    } else {
      spec.split_regexes.push_back(kGpt2Regex);
    }
  } else {
    spec.byte_fallback = true;
    spec.add_space_prefix = bool_or(ckpt, "tokenizer.ggml.add_space_prefix", true);
  }

  for (int32_t i = 0; i < n; ++i) {
    uint8_t t = spec.types[i];
    std::string& text = spec.tokens[i];
    if (t == kControl || t == kUnknown) {
      spec.added.push_back({i, text, true});
    } else if (t == kUserDefined) {
      if (spec.kind == TokenizerKind::kSpm && text.find(' ') != std::string::npos) {
        // Runs of spaces: ordinary "▁▁" pieces to HF (whose GGUF conversion ranks them
        // first, as llama.cpp matches them first in raw text), so they go through the model.
        std::string s;
        for (char c : text) s += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
        text = s;
        spec.types[i] = kNormal;
        if (size_t(i) < spec.scores.size()) spec.scores[i] = 0.f;
      } else {
        spec.added.push_back({i, text, false});
      }
    }
  }
  apply_special_ids(ckpt, n, spec);
  for (int32_t id : eos_by_name(spec.tokens, spec.types)) spec.eos_ids.push_back(id);
  return make_tokenizer(std::move(spec));
}

}  // namespace brisk
