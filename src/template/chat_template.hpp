// A model's chat template: the Jinja source its checkpoint ships (GGUF
// tokenizer.chat_template or tokenizer_config.json's chat_template), parsed once and rendered
// per request into the prompt text, exactly as transformers' apply_chat_template renders it
// (tests/template/chat_template_test.cpp checks this against Python jinja2).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "template/jinja_ast.hpp"

namespace brisk {

class CheckpointIndex;

class ChatTemplate {
 public:
  // Throws Error(kFormat) with the line of a syntax error.
  explicit ChatTemplate(std::string source);

  // messages: OpenAI-style [{"role": ..., "content": ...}, ...]; `extra` adds variables such
  // as tools, bos_token, eos_token, date_string or enable_thinking. Throws Error
  // (kInvalidArgument) when the template refuses the messages (raise_exception), kLimit past
  // the render limits.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                     const jinja::RenderLimits& limits = {}) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<jinja::Program> program_;
};

class Tokenizer;

// The checkpoint's chat template source (for a list of named templates, the "default" one),
// or nothing when it carries none.
std::optional<std::string> find_chat_template(const CheckpointIndex& ckpt);

// The template source --chat-template names: a built-in's (builtin_templates.hpp), or a file's:
// a Jinja file, or a tokenizer_config.json holding a chat_template. Throws Error
// (kInvalidArgument) for a name that is neither, listing the built-ins.
std::string chat_template_source(const std::string& name_or_file);

// Which template a model chats with, and why.
struct ChatTemplateChoice {
  std::string source;
  std::string note;  // one line for the log when the template is not the checkpoint's own
};

// `requested` (--chat-template) when given; else the checkpoint's own; else the built-in the
// arch table names (`arch_default`) when the vocabulary has the special token its format is
// built on, else plain ChatML. A fallback's note is a warning that says which and why.
ChatTemplateChoice choose_chat_template(const CheckpointIndex& ckpt, const Tokenizer& tok,
                                        const std::string& arch_default, const std::string& requested);

}  // namespace brisk
