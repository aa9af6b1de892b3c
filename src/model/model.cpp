#include "model/model.hpp"

#include "base/error.hpp"

namespace brisk {

namespace {

// Reads one byte per page of every tensor so the first forward pass does not stall on page
// faults, reporting progress as it goes.
void prefault(const CheckpointIndex& c, const std::function<void(double)>& progress) {
  uint64_t total = 0, done = 0;
  for (const auto& t : c.tensors) total += t.nbytes;
  volatile uint8_t sink = 0;
  uint64_t next_report = 0;
  for (const auto& t : c.tensors) {
    for (uint64_t off = 0; off < t.nbytes; off += 4096) sink = sink + t.data[off];
    done += t.nbytes;
    if (progress && done >= next_report) {
      progress(total ? double(done) / double(total) : 1.0);
      next_report = done + total / 100;
    }
  }
  if (progress) progress(1.0);
}

// Every token the model can produce must decode, and every token must have an embedding row.
// GGUF files carry exactly one token per row (llama.cpp sizes token_embd by the token list);
// HF checkpoints may pad the embedding beyond the tokenizer (Qwen2.5: 151,936 rows for
// 151,665 tokens), never the other way round.
void check_vocab_fits(const CheckpointIndex& c, const HParams& hp, const Tokenizer& tok) {
  const int64_t tokens = tok.vocab_size();
  if (c.format == "gguf" && tokens != hp.vocab)
    throw Error(ErrorCode::kFormat, "tokenizer.ggml.tokens has " + std::to_string(tokens) +
                                        " tokens but token_embd.weight has " + std::to_string(hp.vocab) + " rows",
                c.path);
  if (tokens > hp.vocab)
    throw Error(ErrorCode::kFormat, "tokenizer.json has " + std::to_string(tokens) + " tokens but config.json vocab_size = " +
                                        std::to_string(hp.vocab) + " (the embedding's rows)",
                c.path);
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, Backend& backend, const ModelLoadOptions& opts) {
  auto m = std::unique_ptr<Model>(new Model());
  m->ckpt_ = open_checkpoint(path);
  m->hp_ = hparams_from_checkpoint(*m->ckpt_);
  m->weights_ = map_weights(*m->ckpt_, m->hp_);
  if (opts.load_tokenizer) {
    m->tokenizer_ = load_tokenizer(*m->ckpt_);
    check_vocab_fits(*m->ckpt_, m->hp_, *m->tokenizer_);
    ChatTemplateChoice choice =
        choose_chat_template(*m->ckpt_, *m->tokenizer_, default_chat_template(m->hp_.arch), opts.chat_template);
    m->own_template_ = choice.note.empty();
    m->chat_template_note_ = choice.note;
    try {
      m->chat_template_ = std::make_unique<ChatTemplate>(choice.source);
    } catch (const Error& e) {  // completions still work; chat requests get this error
      if (!opts.chat_template.empty()) throw;
      m->chat_template_error_ = e.message();
    }
  }
  for (const auto& t : m->ckpt_->tensors) m->weight_bytes_ += t.nbytes;
  prefault(*m->ckpt_, opts.progress);
  m->transformer_ = std::make_unique<Transformer>(m->hp_, m->weights_, backend);
  return m;
}

const ChatTemplate& Model::chat_template() const {
  if (!chat_template_)
    throw Error(ErrorCode::kFormat, chat_template_error_.empty() ? "model was loaded without a tokenizer"
                                                                 : "the model's chat template: " + chat_template_error_);
  return *chat_template_;
}

const Tokenizer& Model::tokenizer() const {
  if (!tokenizer_) throw Error(ErrorCode::kInvalidArgument, "model was loaded without a tokenizer");
  return *tokenizer_;
}

}  // namespace brisk
