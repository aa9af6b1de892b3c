// A model's chat template: the Jinja source its checkpoint ships (GGUF
// tokenizer.chat_template or tokenizer_config.json's chat_template), parsed once and rendered
// per request into the prompt text, exactly as transformers' apply_chat_template renders it
// (tests/tokenizer/chat_template_test.cpp checks this against Python jinja2).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja_ast.hpp"

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

// ChatML, for checkpoints that carry no template (llama.cpp's fallback too).
extern const char* const kDefaultChatTemplate;

// The checkpoint's chat template source (for a list of named templates, the "default" one),
// or nothing when it carries none.
std::optional<std::string> find_chat_template(const CheckpointIndex& ckpt);

}  // namespace brisk
