// The built-in chat templates. Every tag trims the whitespace around it ({%- -%}), so the
// layout here is free and only quoted strings reach the output.
#include "template/builtin_templates.hpp"

#include <vector>

namespace brisk {

namespace {

// Gemma 3: user and model turns only; a system message is folded into the first user turn.
const char* const kGemma3 = R"JINJA(
{{- bos_token -}}
{%- set turns = messages -%}
{%- set system_prefix = '' -%}
{%- if messages[0].role == 'system' -%}
  {%- set system = messages[0].content -%}
  {%- set system_prefix = (system if system is string else system[0].text) + '\n\n' -%}
  {%- set turns = messages[1:] -%}
{%- endif -%}
{%- for m in turns -%}
  {%- if (m.role == 'user') != (loop.index0 % 2 == 0) -%}
    {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') -}}
  {%- endif -%}
  {{- '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + '\n' -}}
  {%- if loop.first -%}{{- system_prefix -}}{%- endif -%}
  {%- if m.content is string -%}
    {{- m.content | trim -}}
  {%- elif m.content is iterable -%}
    {%- for part in m.content -%}
      {%- if part.type == 'image' -%}{{- '<start_of_image>' -}}
      {%- elif part.type == 'text' -%}{{- part.text | trim -}}
      {%- endif -%}
    {%- endfor -%}
  {%- else -%}
    {{- raise_exception('Invalid content type') -}}
  {%- endif -%}
  {{- '<end_of_turn>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start_of_turn>model\n' -}}{%- endif -%}
)JINJA";

// Llama 3.1 / 3.2 / 3.3 instruct: a system header with the knowledge and today's dates;
// tools go into the first user message unless tools_in_user_message is false.
const char* const kLlama3 = R"JINJA(
{{- bos_token -}}
{%- if custom_tools is defined -%}{%- set tools = custom_tools -%}{%- endif -%}
{%- if tools_in_user_message is not defined -%}{%- set tools_in_user_message = true -%}{%- endif -%}
{%- if date_string is not defined -%}{%- set date_string = '26 Jul 2024' -%}{%- endif -%}
{%- if tools is not defined -%}{%- set tools = none -%}{%- endif -%}
{%- set system = '' -%}
{%- if messages[0].role == 'system' -%}
  {%- set system = messages[0].content | trim -%}
  {%- set messages = messages[1:] -%}
{%- endif -%}
{%- set call_format = 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n' -%}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' -}}
{%- if tools is not none -%}{{- 'Environment: ipython\n' -}}{%- endif -%}
{{- 'Cutting Knowledge Date: December 2023\nToday Date: ' + date_string + '\n\n' -}}
{%- if tools is not none and not tools_in_user_message -%}
  {{- 'You have access to the following functions. To call a function, please respond with JSON for a function call.' + call_format -}}
  {%- for t in tools -%}{{- (t | tojson(indent=4)) + '\n\n' -}}{%- endfor -%}
{%- endif -%}
{{- system + '<|eot_id|>' -}}
{%- if tools is not none and tools_in_user_message -%}
  {%- if messages | length == 0 -%}
    {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") -}}
  {%- endif -%}
  {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
  {{- 'Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n' + call_format -}}
  {%- for t in tools -%}{{- (t | tojson(indent=4)) + '\n\n' -}}{%- endfor -%}
  {{- (messages[0].content | trim) + '<|eot_id|>' -}}
  {%- set messages = messages[1:] -%}
{%- endif -%}
{%- for m in messages -%}
  {%- if 'tool_calls' in m -%}
    {%- if m.tool_calls | length != 1 -%}
      {{- raise_exception('This model only supports single tool-calls at once!') -}}
    {%- endif -%}
    {%- set call = m.tool_calls[0].function -%}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "' + call.name + '", "parameters": ' -}}
    {{- (call.arguments | tojson) + '}<|eot_id|>' -}}
  {%- elif m.role == 'tool' or m.role == 'ipython' -%}
    {{- '<|start_header_id|>ipython<|end_header_id|>\n\n' -}}
    {{- (m.content | tojson) if (m.content is mapping or m.content is iterable) else m.content -}}
    {{- '<|eot_id|>' -}}
  {%- else -%}
    {{- '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + (m.content | trim) + '<|eot_id|>' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%}
)JINJA";

// The function-calling instructions Qwen2.5 and Qwen3 put in the system turn.
const char* const kQwenTools = R"JINJA(
  {{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' -}}
  {{- 'You are provided with function signatures within <tools></tools> XML tags:\n<tools>' -}}
  {%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
  {{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments ' -}}
  {{- 'within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, ' -}}
  {{- '"arguments": <args-json-object>}\n</tool_call><|im_end|>\n' -}}
)JINJA";

// Tool results: consecutive ones share one user turn (closes the message loop's if).
const char* const kQwenToolResponse = R"JINJA(
  {%- elif m.role == 'tool' -%}
    {%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
    {{- '\n<tool_response>\n' + m.content + '\n</tool_response>' -}}
    {%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
  {%- endif -%}
)JINJA";

// Qwen2.5 instruct: ChatML with a default system message naming the model.
const char* const kQwen25[] = {R"JINJA(
{%- set default_system = 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' -%}
{%- set system = messages[0].content if messages[0].role == 'system' else default_system -%}
{%- if tools -%}
  {{- '<|im_start|>system\n' + system + '\n\n' -}}
)JINJA", kQwenTools, R"JINJA(
{%- else -%}
  {{- '<|im_start|>system\n' + system + '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in messages -%}
  {%- if m.role == 'user' or (m.role == 'system' and not loop.first) or (m.role == 'assistant' and not m.tool_calls) -%}
    {{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}
  {%- elif m.role == 'assistant' -%}
    {{- '<|im_start|>assistant' -}}
    {%- if m.content -%}{{- '\n' + m.content -}}{%- endif -%}
    {%- for call in m.tool_calls -%}
      {%- set f = call.function if call.function is defined else call -%}
      {{- '\n<tool_call>\n{"name": "' + f.name + '", "arguments": ' + (f.arguments | tojson) + '}\n</tool_call>' -}}
    {%- endfor -%}
    {{- '<|im_end|>\n' -}}
)JINJA", kQwenToolResponse, R"JINJA(
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
)JINJA"};

// Qwen3: ChatML with reasoning. An assistant turn after the last real user query keeps its
// <think> block; earlier ones are shown without it. enable_thinking=false pre-fills an empty one.
const char* const kQwen3[] = {R"JINJA(
{%- if tools -%}
  {{- '<|im_start|>system\n' -}}
  {%- if messages[0].role == 'system' -%}{{- messages[0].content + '\n\n' -}}{%- endif -%}
)JINJA", kQwenTools, R"JINJA(
{%- elif messages[0].role == 'system' -%}
  {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' -}}
{%- endif -%}
{%- set ns = namespace(found=false, last_query=messages | length - 1) -%}
{%- for m in messages[::-1] -%}
  {%- if not ns.found and m.role == 'user' and not (m.content.startswith('<tool_response>') and m.content.endswith('</tool_response>')) -%}
    {%- set ns.found = true -%}
    {%- set ns.last_query = messages | length - 1 - loop.index0 -%}
  {%- endif -%}
{%- endfor -%}
{%- for m in messages -%}
  {%- if m.role == 'user' or (m.role == 'system' and not loop.first) -%}
    {{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}
  {%- elif m.role == 'assistant' -%}
    {%- set content = m.content -%}
    {%- set reasoning = '' -%}
    {%- if m.reasoning_content is defined and m.reasoning_content is not none -%}
      {%- set reasoning = m.reasoning_content -%}
    {%- elif '</think>' in content -%}
      {%- set reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') -%}
      {%- set content = content.split('</think>')[-1].lstrip('\n') -%}
    {%- endif -%}
    {{- '<|im_start|>assistant\n' -}}
    {%- if loop.index0 > ns.last_query and (loop.last or reasoning) -%}
      {{- '<think>\n' + reasoning.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') -}}
    {%- else -%}
      {{- content -}}
    {%- endif -%}
    {%- for call in (m.tool_calls or []) -%}
      {%- if not loop.first or content -%}{{- '\n' -}}{%- endif -%}
      {%- set f = call.function if call.function else call -%}
      {{- '<tool_call>\n{"name": "' + f.name + '", "arguments": ' -}}
      {{- f.arguments if f.arguments is string else (f.arguments | tojson) -}}
      {{- '}\n</tool_call>' -}}
    {%- endfor -%}
    {{- '<|im_end|>\n' -}}
)JINJA", kQwenToolResponse, R"JINJA(
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\n' -}}
  {%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}
{%- endif -%}
)JINJA"};

// Plain ChatML, no default system message (llama.cpp's fallback too).
const char* const kChatML = R"JINJA(
{%- for m in messages -%}{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
)JINJA";

template <size_t N>
std::string join(const char* const (&parts)[N]) {
  std::string out;
  for (const char* p : parts) out += p;
  return out;
}

const std::vector<BuiltinChatTemplate>& table() {
  static const std::string qwen25 = join(kQwen25), qwen3 = join(kQwen3);
  static const std::vector<BuiltinChatTemplate> t = {
      {"gemma3", "Gemma 3 instruct (google/gemma-3-*-it)", "<start_of_turn>", kGemma3},
      {"llama3", "Llama 3.1 / 3.2 / 3.3 instruct", "<|start_header_id|>", kLlama3},
      {"qwen2.5", "Qwen2.5 instruct", "<|im_start|>", qwen25.c_str()},
      {"qwen3", "Qwen3, with <think> reasoning", "<|im_start|>", qwen3.c_str()},
      {"chatml", "plain ChatML", "<|im_start|>", kChatML},
  };
  return t;
}

}  // namespace

std::span<const BuiltinChatTemplate> builtin_chat_templates() { return table(); }

const BuiltinChatTemplate* find_builtin_chat_template(std::string_view name) {
  for (const auto& t : table())
    if (name == t.name) return &t;
  return nullptr;
}

std::string builtin_chat_template_names() {
  std::string out;
  for (const auto& t : table()) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

}  // namespace brisk
