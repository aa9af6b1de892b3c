#include "tokenizer/chat_template.hpp"

#include "base/error.hpp"
#include "format/checkpoint.hpp"

namespace brisk {

const char* const kDefaultChatTemplate =
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

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

std::optional<std::string> find_chat_template(const CheckpointIndex& ckpt) {
  auto it = ckpt.metadata.find("tokenizer.chat_template");
  if (it != ckpt.metadata.end() && it->second.type == MetaType::String) return it->second.s;
  const auto& cfg = ckpt.hf_tokenizer_config;
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

}  // namespace brisk
