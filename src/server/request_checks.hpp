// Checks on a request body that openai_schema.cpp's field-by-field parse leaves out: fields
// brisk does not implement (a 400 naming the field, unless its value changes nothing), the
// shape of `tools`, and a bound that refuses a prompt too long for the context from its
// byte length alone, before tokenizing it costs anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>


namespace brisk::server {

enum class Endpoint;

// Throws Error(kInvalidArgument) naming the field (the error body's "param").
[[noreturn]] void bad_field(const std::string& param, const std::string& message);
// The field, or nullptr when it is absent or null (null means "the default" in OpenAI's API).
const nlohmann::ordered_json* json_field(const nlohmann::ordered_json& body, const char* key);

// Throws Error(kInvalidArgument, where = the field) for a field brisk would otherwise ignore
// while it changes the output: best_of other than 1, functions / function_call, audio,
// prediction, modalities other than ["text"].
void refuse_unimplemented_fields(Endpoint endpoint, const nlohmann::ordered_json& body);

// tool_choice and parallel_tool_calls, checked (a name or "required" needs tools).
struct ToolChoice {
  std::string mode = "auto";  // auto, none, required, function
  std::string function;       // mode "function": its name
  bool parallel = true;
};
ToolChoice tool_choice(const nlohmann::ordered_json& body);

// `tools` checked as OpenAI defines it (a list of {"type": "function", "function": {"name",
// "description"?, "parameters"?, "strict"?}}); null when absent, empty, or tool_choice is
// "none" (the template then offers no tools).
nlohmann::ordered_json checked_tools(const nlohmann::ordered_json& body);

// Throws the context-length error (where = param) when text of `bytes` bytes cannot fit.
void check_prompt_bytes(size_t bytes, size_t bytes_per_token, int64_t context, const std::string& param);
// Throws the context-length error when a prompt of `tokens` leaves no room to generate.
void check_prompt_tokens(size_t tokens, int64_t context, const std::string& param);

}  // namespace brisk::server
