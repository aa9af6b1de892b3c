#include "template/tool_format.hpp"

#include "base/error.hpp"

namespace brisk {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& function_of(const ojson& tool) {
  static const ojson none = ojson::object();
  auto it = tool.find("function");
  return it != tool.end() && it->is_object() ? *it : none;
}

// A call's arguments as an object when they are JSON text of one (as vLLM passes them on).
ojson arguments_object(const ojson& call) {
  ojson c = call;
  ojson* f = c.contains("function") && c["function"].is_object() ? &c["function"] : &c;
  if (f->contains("arguments") && (*f)["arguments"].is_string()) {
    try {
      ojson parsed = ojson::parse((*f)["arguments"].get<std::string>());
      if (parsed.is_object()) (*f)["arguments"] = std::move(parsed);
    } catch (const ojson::exception&) {
    }
  }
  return c;
}

std::string preamble(const ojson& tools) {
  std::string p =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const ojson& t : tools) p += "\n" + t.dump();
  p += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
       "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
       "<args-json-object>}\n</tool_call>";
  return p;
}

std::string call_text(const ojson& call) {
  const ojson& f = call.contains("function") ? call["function"] : call;
  ojson body = ojson::object();
  body["name"] = f.value("name", "");
  body["arguments"] = f.contains("arguments") ? f["arguments"] : ojson::object();
  return "<tool_call>\n" + body.dump() + "\n</tool_call>";
}

// Hermes syntax in plain turns, for a template without tools.
ojson with_preamble(const ojson& messages, const ojson& tools) {
  ojson out = ojson::array();
  const std::string pre = tools.is_array() && !tools.empty() ? preamble(tools) : "";
  size_t i = 0;
  if (!pre.empty()) {
    if (!messages.empty() && messages[0].value("role", "") == "system") {
      ojson sys = messages[0];
      sys["content"] = sys.value("content", "") + "\n\n" + pre;
      out.push_back(std::move(sys));
      i = 1;
    } else {
      out.push_back(ojson{{"role", "system"}, {"content", pre}});
    }
  }
  for (; i < messages.size(); ++i) {
    ojson m = messages[i];
    const std::string role = m.value("role", "");
    if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array()) {
      std::string text = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
      for (const ojson& call : m["tool_calls"]) text += (text.empty() ? "" : "\n") + call_text(call);
      m.erase("tool_calls");
      m["content"] = text;
    } else if (role == "tool") {  // consecutive results share one user turn
      const std::string text = "<tool_response>\n" + m.value("content", "") + "\n</tool_response>";
      if (i > 0 && messages[i - 1].value("role", "") == "tool") {
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + text;
        continue;
      }
      m = ojson{{"role", "user"}, {"content", text}};
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

ChatFormat detect_chat_format(const std::string& src) {
  ChatFormat f;
  f.template_renders_tools = src.find("tools") != std::string::npos;
  f.reasoning = src.find("</think>") != std::string::npos;
  const bool hermes = src.find("<tool_call>") != std::string::npos;
  const bool llama = src.find("<|python_tag|>") != std::string::npos || src.find("\"parameters\"") != std::string::npos;
  f.tool_syntax = !hermes && llama && f.template_renders_tools ? ToolSyntax::kLlama3Json : ToolSyntax::kHermes;
  return f;
}

ojson messages_for_template(const ojson& messages, const ojson& tools, const ChatFormat& format) {
  ojson out = ojson::array();
  for (const ojson& m : messages) {
    ojson c = m;
    if (c.contains("tool_calls") && c["tool_calls"].is_array()) {
      ojson calls = ojson::array();
      for (const ojson& call : c["tool_calls"]) calls.push_back(arguments_object(call));
      c["tool_calls"] = std::move(calls);
    }
    out.push_back(std::move(c));
  }
  return format.template_renders_tools ? out : with_preamble(out, tools);
}

OutputConstraint tool_call_constraint(const ChatFormat& format, const ojson& tools, const std::string& function,
                                      bool parallel) {
  const bool llama = format.tool_syntax == ToolSyntax::kLlama3Json;
  ojson alternatives = ojson::array();
  for (const ojson& t : tools) {
    const ojson& f = function_of(t);
    const std::string name = f.value("name", "");
    if (!function.empty() && name != function) continue;
    ojson params = f.contains("parameters") && f["parameters"].is_object() ? f["parameters"] : ojson{{"type", "object"}};
    ojson call{{"type", "object"},
               {"properties", ojson{{"name", ojson{{"const", name}}}, {llama ? "parameters" : "arguments", params}}},
               {"required", ojson::array({"name", llama ? "parameters" : "arguments"})},
               {"additionalProperties", false}};
    alternatives.push_back(std::move(call));
  }
  if (alternatives.empty())
    throw Error(ErrorCode::kInvalidArgument, "tool_choice names the function '" + function + "', which is not in 'tools'",
                "tool_choice");
  OutputConstraint c;
  c.kind = OutputConstraint::Kind::JsonSchema;
  c.text = (alternatives.size() == 1 ? alternatives[0] : ojson{{"anyOf", alternatives}}).dump();
  c.strict = true;
  if (!llama) c.before = "<tool_call>\n", c.after = "\n</tool_call>", c.between = "\n";
  c.max_count = parallel && !llama && function.empty() ? -1 : 1;
  return c;
}

}  // namespace brisk
