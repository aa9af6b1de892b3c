// Tools in chat: which syntax a template's model writes calls in, the messages as templates
// expect them (a call's arguments as an object), a preamble for templates that know no tools,
// and the constraint that makes a model call a tool (tool_choice "required" or a name).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "brisk/chat.hpp"
#include "brisk/types.hpp"

namespace brisk {

// From the template's source: Hermes tags (Qwen), Llama 3's JSON calls, thinking tags.
ChatFormat detect_chat_format(const std::string& template_source);

// The messages for rendering: assistant tool_calls with their arguments parsed into objects
// (templates write them with tojson); for a template that does not render tools, the tools
// described in a system preamble, earlier calls written into the assistant's text and tool
// results as a user turn, all in Hermes syntax.
nlohmann::ordered_json messages_for_template(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                             const ChatFormat& format);

// A constraint that makes the answer tool calls in the format's syntax: one call (or several,
// with parallel, where the syntax has them) of any of `tools`, or only of `function` when it
// is not empty. Throws Error(kInvalidArgument) for an unknown function name or a bad schema.
OutputConstraint tool_call_constraint(const ChatFormat& format, const nlohmann::ordered_json& tools,
                                      const std::string& function, bool parallel);

}  // namespace brisk
