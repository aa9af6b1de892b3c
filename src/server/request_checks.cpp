#include "server/request_checks.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "server/openai_schema.hpp"

namespace brisk::server {

void bad_field(const std::string& param, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message, param);
}

const ojson* json_field(const ojson& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

namespace {

// A field brisk does not implement: present, it must hold the value that changes nothing.
void only_noop(const ojson& body, const char* key, bool noop, const std::string& accepted) {
  if (json_field(body, key) && !noop)
    bad_field(key, std::string("'") + key + "' is not supported" + (accepted.empty() ? "" : " (only " + accepted + ")"));
}

bool is(const ojson* v, const ojson& value) { return v && *v == value; }

void check_tool(const ojson& t) {
  if (!t.is_object() || t.value("type", ojson()) != "function")
    bad_field("tools", "each tool must be an object with \"type\": \"function\"");
  const ojson* f = json_field(t, "function");
  if (!f || !f->is_object()) bad_field("tools", "each tool needs a 'function' object");
  const ojson* name = json_field(*f, "name");
  if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
    bad_field("tools", "each tool's function needs a non-empty 'name' string");
  if (const ojson* d = json_field(*f, "description"); d && !d->is_string())
    bad_field("tools", "a tool's 'description' must be a string");
  if (const ojson* p = json_field(*f, "parameters"); p && !p->is_object())
    bad_field("tools", "a tool's 'parameters' must be a JSON Schema object");
  if (const ojson* s = json_field(*f, "strict"); s && !s->is_boolean()) bad_field("tools", "a tool's 'strict' must be true or false");
}

}  // namespace

void refuse_unimplemented_fields(Endpoint endpoint, const ojson& body) {
  if (endpoint == Endpoint::Completion) {
    only_noop(body, "best_of", is(json_field(body, "best_of"), 1), "1");
    return;
  }
  const ojson* fns = json_field(body, "functions");
  only_noop(body, "functions", fns && fns->is_array() && fns->empty(), "an empty list; use 'tools'");
  const ojson* fc = json_field(body, "function_call");
  only_noop(body, "function_call", is(fc, "auto") || is(fc, "none"), "\"auto\" or \"none\"");
  only_noop(body, "modalities", is(json_field(body, "modalities"), ojson::array({"text"})), "[\"text\"]");
  only_noop(body, "audio", false, "");
  only_noop(body, "prediction", false, "");
}

ToolChoice tool_choice(const ojson& body) {
  ToolChoice c;
  const ojson* tc = json_field(body, "tool_choice");
  const ojson* tools = json_field(body, "tools");
  const bool have_tools = tools && tools->is_array() && !tools->empty();
  if (tc && tc->is_string()) {
    const std::string m = tc->get<std::string>();
    if (m != "auto" && m != "none" && m != "required")
      bad_field("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or a named function");
    c.mode = m;
  } else if (tc) {
    const ojson* f = tc->is_object() && tc->value("type", ojson()) == "function" ? json_field(*tc, "function") : nullptr;
    const ojson* name = f && f->is_object() ? json_field(*f, "name") : nullptr;
    if (!name || !name->is_string())
      bad_field("tool_choice", "a named 'tool_choice' is {\"type\": \"function\", \"function\": {\"name\": ...}}");
    c.mode = "function";
    c.function = name->get<std::string>();
  }
  if ((c.mode == "required" || c.mode == "function") && !have_tools)
    bad_field("tool_choice", "'tool_choice' " + (c.function.empty() ? std::string("\"required\"") : "'" + c.function + "'") +
                                 " needs a non-empty 'tools' list");
  if (const ojson* p = json_field(body, "parallel_tool_calls")) {
    if (!p->is_boolean()) bad_field("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
    c.parallel = p->get<bool>();
  }
  return c;
}

ojson checked_tools(const ojson& body) {
  const ojson* tools = json_field(body, "tools");
  if (!tools) return nullptr;
  if (!tools->is_array()) bad_field("tools", "'tools' must be a list");
  for (const ojson& t : *tools) check_tool(t);
  if (tools->empty() || is(json_field(body, "tool_choice"), "none")) return nullptr;
  return *tools;
}

void check_prompt_bytes(size_t bytes, size_t bytes_per_token, int64_t context, const std::string& param) {
  if (bytes_per_token == 0 || context < 1) return;
  const size_t min_tokens = (bytes + bytes_per_token - 1) / bytes_per_token;
  if (min_tokens >= size_t(context))
    bad_field(param, "the prompt has at least " + std::to_string(min_tokens) + " tokens (" + std::to_string(bytes) +
                   " bytes) but the context is " + std::to_string(context) + " tokens, which leaves no room to generate");
}

void check_prompt_tokens(size_t tokens, int64_t context, const std::string& param) {
  if (int64_t(tokens) >= context)
    bad_field(param, "the prompt has " + std::to_string(tokens) + " tokens but the context is " + std::to_string(context) +
                   " tokens, which leaves no room to generate");
}

}  // namespace brisk::server
