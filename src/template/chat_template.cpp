#include "template/chat_template.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "template/builtin_templates.hpp"
#include "tokenizer/tokenizer.hpp"

namespace brisk {

ChatTemplate::ChatTemplate(std::string source)
    : source_(std::move(source)), program_(jinja::parse_template(source_)) {}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra, const jinja::RenderLimits& limits) const {
  if (!messages.is_array()) throw Error(ErrorCode::kInvalidArgument, "messages must be a list", "messages");
  jinja::Object vars = {{"messages", jinja::from_json(messages)},
                        {"add_generation_prompt", jinja::Value::boolean(add_generation_prompt)}};
  if (extra.is_object())
    for (auto it = extra.begin(); it != extra.end(); ++it) vars.emplace_back(it.key(), jinja::from_json(it.value()));
  return jinja::render(*program_, vars, limits);
}

namespace {

// tokenizer_config.json's chat_template: a string, or a list of named ones.
std::optional<std::string> from_tokenizer_config(const nlohmann::json& cfg) {
  if (!cfg.is_object() || !cfg.contains("chat_template")) return std::nullopt;
  const auto& t = cfg["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array())  // [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
    for (const auto& named : t)
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string())
        return named["template"].get<std::string>();
  return std::nullopt;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw Error(ErrorCode::kIo, "cannot read the chat template file", path);
  return text.str();
}

// One token that the tokenizer treats as special: the format's markers must not be split.
bool has_special_token(const Tokenizer& tok, const std::string& text) {
  const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
  return ids.size() == 1 && tok.is_special(ids[0]);
}

}  // namespace

std::optional<std::string> find_chat_template(const CheckpointIndex& ckpt) {
  auto it = ckpt.metadata.find("tokenizer.chat_template");
  if (it != ckpt.metadata.end() && it->second.type == MetaType::String) return it->second.s;
  return from_tokenizer_config(ckpt.hf_tokenizer_config);
}

std::string chat_template_source(const std::string& name_or_file) {
  if (const BuiltinChatTemplate* b = find_builtin_chat_template(name_or_file)) return b->source;
  if (!std::filesystem::is_regular_file(name_or_file))
    throw Error(ErrorCode::kInvalidArgument,
                "'" + name_or_file + "' is neither a chat template file nor a built-in template (" +
                    builtin_chat_template_names() + ")",
                "--chat-template");
  std::string text = read_text_file(name_or_file);
  if (std::filesystem::path(name_or_file).extension() != ".json") return text;
  const auto cfg = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (auto source = from_tokenizer_config(cfg)) return *source;
  throw Error(ErrorCode::kFormat, "the JSON file holds no chat_template", name_or_file);
}

ChatTemplateChoice choose_chat_template(const CheckpointIndex& ckpt, const Tokenizer& tok,
                                        const std::string& arch_default, const std::string& requested) {
  if (!requested.empty()) {
    const bool builtin = find_builtin_chat_template(requested) != nullptr;
    return {chat_template_source(requested),
            "chat template: " + (builtin ? "the built-in '" + requested + "'" : requested) + " (--chat-template)"};
  }
  if (auto own = find_chat_template(ckpt)) return {*own, ""};
  const std::string file = std::filesystem::path(ckpt.path).filename().string();
  const std::string why = "warning: " + file + " carries no chat template; ";
  const std::string how = " (--chat-template FILE|NAME chooses another)";
  const BuiltinChatTemplate* b = find_builtin_chat_template(arch_default);
  if (b && has_special_token(tok, b->marker))
    return {b->source, why + "chat uses brisk's built-in '" + b->name + "' template (" + b->format +
                           "), the default for its architecture" + how};
  const BuiltinChatTemplate* chatml = find_builtin_chat_template("chatml");
  std::string reason = b ? "its vocabulary lacks " + std::string(b->marker) + ", which the '" + b->name +
                               "' default of its architecture needs"
                         : "its architecture has no default";
  return {chatml->source, why + reason + ", so chat uses plain ChatML, which the model may not know" + how};
}

}  // namespace brisk
