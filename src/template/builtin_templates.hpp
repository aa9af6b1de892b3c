// Chat templates brisk carries itself, for checkpoints that ship none (many GGUF files, e.g.
// the Gemma 3 270M one) and for --chat-template NAME. Each is Jinja source, written here to
// render exactly what the model family's official template renders for the same messages
// (tests/template/builtin_templates_test.cpp checks that against jinja2's renders of the
// official templates, and the Gemma one down to the real tokenizer's ids).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace brisk {

struct BuiltinChatTemplate {
  const char* name;    // what --chat-template takes
  const char* format;  // the official template it reproduces, for --help
  const char* marker;  // a special token the format is built on: a vocabulary without it cannot use it
  const char* source;  // Jinja
};

std::span<const BuiltinChatTemplate> builtin_chat_templates();
const BuiltinChatTemplate* find_builtin_chat_template(std::string_view name);
// "gemma3, llama3, qwen2.5, qwen3, chatml"
std::string builtin_chat_template_names();

}  // namespace brisk
