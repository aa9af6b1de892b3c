// Model: a loaded checkpoint ready to run: its index (the file mappings), HParams, weight
// roles, tokenizer, and the transformer with weights resident on a backend.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "format/checkpoint.hpp"
#include "model/hparams.hpp"
#include "model/transformer.hpp"
#include "model/weights.hpp"
#include "template/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace brisk {

struct ModelLoadOptions {
  bool load_tokenizer = true;
  // Called with the fraction of weight bytes brought into memory so far (0..1).
  std::function<void(double)> progress;
  // --chat-template: a built-in template's name or a file; empty: the checkpoint's own, else
  // the built-in its architecture names (choose_chat_template).
  std::string chat_template;
};

class Model {
 public:
  static std::unique_ptr<Model> load(const std::string& path, Backend& backend, const ModelLoadOptions& opts = {});

  const CheckpointIndex& checkpoint() const { return *ckpt_; }
  const HParams& hparams() const { return hp_; }
  const Tokenizer& tokenizer() const;  // throws when loaded without one
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  Transformer& transformer() { return *transformer_; }
  // The chat template LoadOptions::chat_template names, else the checkpoint's, else a built-in.
  // Throws Error(kFormat) when the checkpoint's template does not parse.
  const ChatTemplate& chat_template() const;
  bool has_own_chat_template() const { return own_template_; }
  // One line for the log when the template is not the checkpoint's own (a fallback: a warning).
  const std::string& chat_template_note() const { return chat_template_note_; }
  uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  std::unique_ptr<CheckpointIndex> ckpt_;
  HParams hp_;
  WeightSet weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Transformer> transformer_;
  uint64_t weight_bytes_ = 0;
  std::unique_ptr<ChatTemplate> chat_template_;
  std::string chat_template_error_;
  std::string chat_template_note_;
  bool own_template_ = false;
};

}  // namespace brisk
