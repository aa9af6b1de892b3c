// A chat answer as the OpenAI API returns it (content, reasoning, tool calls), parsed from
// the text a model writes in its chat template's own syntax, whole or as it streams.
//
//   brisk::ChatOutputParser p(engine->chat_format(), {"get_weather"}, /*reasoning_open=*/false);
//   for (piece : generated) for (const ChatDelta& d : p.feed(piece)) ...;   // as it streams
//   for (const ChatDelta& d : p.finish()) ...;
//
// A streamed answer's deltas put together (ChatMessage::from) are exactly the whole answer's
// parse. Text that looks like a tool call but is not one (malformed JSON, an unknown name)
// stays content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisk {

// How a chat template writes tool calls.
enum class ToolSyntax {
  kHermes,      // <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, several in a row (Qwen2.5, Qwen3)
  kLlama3Json,  // {"name": ..., "parameters": {...}} as the answer itself (Llama 3.1, 3.2)
};

struct ChatFormat {
  ToolSyntax tool_syntax = ToolSyntax::kHermes;
  // The template renders `tools` itself; else brisk describes them in a system preamble (in
  // Hermes syntax) and writes tool results as user turns, for templates such as Gemma 3's.
  bool template_renders_tools = false;
  bool reasoning = false;  // the model thinks between <think> and </think> (Qwen3)
};

struct ToolCall {
  std::string id;         // "call_..."
  std::string name;
  std::string arguments;  // JSON text, as the model wrote it
};

// One piece of an answer as it streams: text of the content or of the reasoning, the start of
// a tool call (its id and name), or a fragment of a call's arguments.
struct ChatDelta {
  enum class Kind { kContent, kReasoning, kToolCall, kToolArguments };
  Kind kind = Kind::kContent;
  std::string text;       // kContent, kReasoning, kToolArguments
  int index = 0;          // kToolCall, kToolArguments: the call's position in the answer
  std::string id, name;   // kToolCall
};

struct ChatMessage {
  std::string content, reasoning;
  std::vector<ToolCall> tool_calls;
  static ChatMessage from(const std::vector<ChatDelta>& deltas);
};

// The rendered prompt ends inside a think block (the template opened it for the model): the
// parser's reasoning_open.
bool prompt_opens_reasoning(const ChatFormat& format, std::string_view prompt);

class ChatOutputParser {
 public:
  // tool_names: the functions a call may name (none: every call-like text is content).
  // reasoning_open: the prompt ends inside a think block (the template opened it).
  ChatOutputParser(const ChatFormat& format, std::vector<std::string> tool_names, bool reasoning_open);
  std::vector<ChatDelta> feed(std::string_view text);
  std::vector<ChatDelta> finish();  // the end of the answer: what was held back

 private:
  enum class Mode { kStart, kReasoning, kContent, kCall };
  // Text of one kind with the whitespace at its start dropped and at its end held back (so
  // that "answer\n<tool_call>" gives the content "answer").
  struct Segment {
    bool started = false;
    std::string pending_space;
  };
  bool step();  // one move; false when it needs more text
  bool step_start();
  bool step_reasoning();
  bool step_content();
  bool step_call();
  bool after_call(size_t end);
  void emit(ChatDelta::Kind kind, Segment& seg, std::string_view text);
  bool emit_before(std::string_view tag, ChatDelta::Kind kind, Segment& seg);
  void fall_back_to_content();

  ChatFormat format_;
  std::vector<std::string> tools_;
  Mode mode_ = Mode::kStart;
  bool final_ = false;          // finish(): no more text will come
  bool calls_possible_ = true;  // Llama 3 syntax: only at the start of the answer
  std::string buf_;             // text not yet consumed
  std::string call_text_;       // kCall: the call's text so far (its opening tag excluded)
  std::string call_opener_;     // the tag that opened it (content again if it is no call)
  bool call_started_ = false;
  size_t args_sent_ = 0;        // kCall: how much of call_text_ went out as arguments
  int calls_ = 0;
  Segment content_, reasoning_;
  std::vector<ChatDelta> out_;
};

}  // namespace brisk
