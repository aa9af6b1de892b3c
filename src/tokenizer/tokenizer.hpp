// Text <-> token ids. Two kinds behind one interface: byte-level BPE (Qwen2/Qwen3, Llama 3)
// and SentencePiece-style BPE (Gemma 3), each loadable from GGUF metadata or tokenizer.json.
// Token ids match Hugging Face `tokenizers` exactly (tests/tokenizer parity corpus).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace brisk {

class CheckpointIndex;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // add_special: prepend BOS (and whatever the model's post-processor adds) when the model
  // asks for it. parse_special: text such as "<|im_end|>" becomes its special token id.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                                      bool parse_special = true) const = 0;

  // The raw bytes a token stands for (byte-level decoding, "▁" -> " ", <0xNN> -> byte).
  // Special/control tokens give their text, e.g. "<end_of_turn>".
  virtual std::string token_bytes(int32_t id) const = 0;

  // Whole-sequence decode as HF `decode(ids, skip_special_tokens)` does it.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual bool is_special(int32_t id) const = 0;  // control / added-special tokens
  virtual const std::string& token_text(int32_t id) const = 0;  // the vocab entry as stored

  int32_t bos_id() const { return bos_id_; }             // -1 when the model has none
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }  // every end-of-generation id
  bool is_eos(int32_t id) const;
  // Extra end-of-generation ids (e.g. generation_config.json's eos_token_id list).
  void add_eos_id(int32_t id);

 protected:
  int32_t bos_id_ = -1;
  std::vector<int32_t> eos_ids_;
};

// From a GGUF file's tokenizer.ggml.* metadata.
std::unique_ptr<Tokenizer> load_tokenizer_gguf(const CheckpointIndex& ckpt);
// From a tokenizer.json (and tokenizer_config.json's added tokens / bos / eos when given).
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& tokenizer_json_path,
                                               const std::string& tokenizer_config_path = {});
// Whichever the checkpoint carries.
std::unique_ptr<Tokenizer> load_tokenizer(const CheckpointIndex& ckpt);

// Streams text as tokens arrive without ever emitting half a UTF-8 character: bytes of an
// incomplete sequence are held until the rest arrives (or flush() is called).
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok, bool skip_special = true);
  std::string push(int32_t id);  // text that is now complete
  std::string flush();           // whatever is left, invalid bytes replaced by U+FFFD

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  bool first_ = true;
  std::string pending_;
};

}  // namespace brisk
