// ChatOutputParser on answers in each template family's syntax (Qwen2.5 and Qwen3 Hermes
// calls, Qwen3 thinking, Llama 3 JSON calls), well formed and malformed: the whole parse,
// and the same answer streamed in pieces of every size, which must put together exactly.
#include <gtest/gtest.h>

#include <random>

#include "brisk/chat.hpp"
#include "template/call_scan.hpp"
#include "template/tool_format.hpp"

namespace brisk {
namespace {

const std::vector<std::string> kTools = {"get_weather", "search"};
const ChatFormat kHermes{ToolSyntax::kHermes, true, false};
const ChatFormat kQwen3{ToolSyntax::kHermes, true, true};
const ChatFormat kLlama{ToolSyntax::kLlama3Json, true, false};

ChatMessage whole(const ChatFormat& f, const std::string& text, bool open = false) {
  ChatOutputParser p(f, kTools, open);
  std::vector<ChatDelta> d = p.feed(text);
  for (ChatDelta& x : p.finish()) d.push_back(std::move(x));
  return ChatMessage::from(d);
}

// The answer fed in pieces of `piece` bytes (0: random sizes); every delta is checked to be
// in OpenAI's order (a call's start before its arguments, indices in order).
ChatMessage streamed(const ChatFormat& f, const std::string& text, size_t piece, bool open = false) {
  ChatOutputParser p(f, kTools, open);
  std::mt19937 rng(uint32_t(text.size() + piece));
  std::vector<ChatDelta> all;
  for (size_t i = 0; i < text.size();) {
    const size_t n = piece ? piece : 1 + rng() % 7;
    for (ChatDelta& x : p.feed(text.substr(i, n))) all.push_back(std::move(x));
    i += n;
  }
  for (ChatDelta& x : p.finish()) all.push_back(std::move(x));
  int calls = 0;
  for (const ChatDelta& d : all) {
    if (d.kind == ChatDelta::Kind::kToolCall) {
      EXPECT_EQ(d.index, calls++);
    }
    if (d.kind == ChatDelta::Kind::kToolArguments) {
      EXPECT_EQ(d.index, calls - 1);
    }
    if (d.kind != ChatDelta::Kind::kToolCall) {
      EXPECT_FALSE(d.text.empty());
    }
  }
  return ChatMessage::from(all);
}

void expect_same(const ChatMessage& a, const ChatMessage& b, const std::string& what) {
  EXPECT_EQ(a.content, b.content) << what;
  EXPECT_EQ(a.reasoning, b.reasoning) << what;
  ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size()) << what;
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name) << what;
    EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments) << what;
  }
}

void expect_streams_alike(const ChatFormat& f, const std::string& text, bool open = false) {
  const ChatMessage w = whole(f, text, open);
  for (size_t piece : {1, 2, 3, 5, 11, 0}) expect_same(w, streamed(f, text, piece, open), text + " in pieces of " + std::to_string(piece));
}

TEST(ChatOutput, HermesCalls) {
  const std::string text =
      "I will look it up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2]}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"a \\\"quoted\\\" } brace\"}}\n</tool_call>";
  const ChatMessage m = whole(kHermes, text);
  EXPECT_EQ(m.content, "I will look it up.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\", \"days\": [1, 2]}");
  EXPECT_EQ(m.tool_calls[1].name, "search");
  EXPECT_EQ(m.tool_calls[1].arguments, "{\"q\": \"a \\\"quoted\\\" } brace\"}");
  EXPECT_EQ(m.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(m.tool_calls[0].id, m.tool_calls[1].id);
  expect_streams_alike(kHermes, text);
}

TEST(ChatOutput, HermesArgumentsBeforeNameAndExtraKeys) {
  const std::string text = "<tool_call>{\"arguments\": {\"q\": 1}, \"name\": \"search\", \"id\": 7}</tool_call>";
  const ChatMessage m = whole(kHermes, text);
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"q\": 1}");
  expect_streams_alike(kHermes, text);
}

TEST(ChatOutput, PlainTextStaysAsWritten) {
  for (const std::string text : {"Just an answer.", "  spaced  out \n", "a < b and <tool is not a tag", "<tool_cal"}) {
    ChatMessage m = whole(kHermes, text);
    std::string trimmed = text;
    trimmed.erase(0, trimmed.find_first_not_of(" \n"));
    trimmed.erase(trimmed.find_last_not_of(" \n") + 1);
    EXPECT_EQ(m.content, trimmed);
    EXPECT_TRUE(m.tool_calls.empty());
    expect_streams_alike(kHermes, text);
  }
}

TEST(ChatOutput, MalformedCallsFallBackToContent) {
  const std::vector<std::string> bad = {
      "<tool_call>\nnot json at all\n</tool_call>",
      "<tool_call>\n{\"name\": \"unknown_tool\", \"arguments\": {}}\n</tool_call>",
      "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>",
      "<tool_call>\n{\"name\": 5, \"arguments\": {}}\n</tool_call>",
      "<tool_call>\n{}\n</tool_call>",
      "<tool_call>\n{\"name\": \"search\"",  // cut off before the arguments
      "<tool_call>",
  };
  for (const std::string& text : bad) {
    const ChatMessage m = whole(kHermes, text);
    EXPECT_TRUE(m.tool_calls.empty()) << text;
    EXPECT_EQ(m.content, text.substr(0, text.find_last_not_of(" \n") + 1)) << text;
    expect_streams_alike(kHermes, text);
  }
}

TEST(ChatOutput, CallCutShortKeepsWhatWasWritten) {
  const std::string text = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"unfinis";
  const ChatMessage m = whole(kHermes, text);
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"q\": \"unfinis");
  expect_streams_alike(kHermes, text);
}

TEST(ChatOutput, Qwen3Thinking) {
  const std::string text =
      "<think>\nThe user wants the weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const ChatMessage m = whole(kQwen3, text);
  EXPECT_EQ(m.reasoning, "The user wants the weather.");
  EXPECT_EQ(m.content, "Checking.");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  expect_streams_alike(kQwen3, text);
  // The template opened the block itself; thinking cut off by the length limit.
  const ChatMessage open = whole(kQwen3, "step one\nstep two</think>\n\nDone.", true);
  EXPECT_EQ(open.reasoning, "step one\nstep two");
  EXPECT_EQ(open.content, "Done.");
  expect_streams_alike(kQwen3, "step one\nstep two</think>\n\nDone.", true);
  EXPECT_EQ(whole(kQwen3, "<think>still thinking", false).reasoning, "still thinking");
  EXPECT_EQ(whole(kQwen3, "<thinking is a word", false).content, "<thinking is a word");
  EXPECT_EQ(whole(kHermes, "<think>x</think>y").content, "<think>x</think>y");  // no reasoning in this format
}

TEST(ChatOutput, Llama3JsonCalls) {
  const std::string one = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}";
  ChatMessage m = whole(kLlama, one);
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Rome\"}");
  EXPECT_EQ(m.content, "");
  expect_streams_alike(kLlama, one);
  const std::string two = "<|python_tag|>{\"type\": \"function\", \"name\": \"search\", \"parameters\": {\"q\": \"x\"}}; " + one;
  m = whole(kLlama, two);
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "search");
  expect_streams_alike(kLlama, two);
  // JSON that is not a call, and a call after prose, are content.
  for (const std::string text : {"{\"answer\": 42}", "Sure: {\"name\": \"search\", \"parameters\": {}}", "{\"name\": \"search\", "}) {
    m = whole(kLlama, text);
    EXPECT_TRUE(m.tool_calls.empty()) << text;
    EXPECT_EQ(m.content, text.substr(0, text.find_last_not_of(' ') + 1)) << text;
    expect_streams_alike(kLlama, text);
  }
}

TEST(ChatOutput, NoToolsMeansNoCalls) {
  ChatOutputParser p(kHermes, {}, false);
  std::vector<ChatDelta> d = p.feed("<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>");
  for (ChatDelta& x : p.finish()) d.push_back(std::move(x));
  EXPECT_TRUE(ChatMessage::from(d).tool_calls.empty());
}

TEST(ChatOutput, RandomBytesNeverBreakIt) {
  std::mt19937 rng(3);
  const std::string alphabet = "<>{}[]\":,\\ \nabtool_call/think|";
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (int n = int(rng() % 60); n > 0; --n) text += alphabet[rng() % alphabet.size()];
    if (i % 3 == 0) text = "<tool_call>{\"name\": \"search\", \"arguments\": " + text;
    for (const ChatFormat& f : {kHermes, kQwen3, kLlama}) expect_streams_alike(f, text);
  }
}

TEST(CallScan, Values) {
  EXPECT_EQ(scan_json_value("123,", 0, false), 3u);
  EXPECT_EQ(scan_json_value("123", 0, false), kNeedMore);
  EXPECT_EQ(scan_json_value("123", 0, true), 3u);
  EXPECT_EQ(scan_json_value("tru", 0, true), kBad);
  EXPECT_EQ(scan_json_value("{\"a\": [1, {\"b\": \"]\"}]}x", 0, false), 22u);
  EXPECT_EQ(scan_json_value("{\"a\": [1}", 0, false), kBad);
}

TEST(ToolFormat, Detection) {
  EXPECT_EQ(detect_chat_format("{{ tools }} <tool_call>").tool_syntax, ToolSyntax::kHermes);
  EXPECT_EQ(detect_chat_format("{% if tools %}<|python_tag|>{% endif %}").tool_syntax, ToolSyntax::kLlama3Json);
  EXPECT_FALSE(detect_chat_format("{{ messages }}").template_renders_tools);
  EXPECT_TRUE(detect_chat_format("{{ tools }}<think></think>").reasoning);
}

TEST(ToolFormat, PreambleForTemplatesWithoutTools) {
  using ojson = nlohmann::ordered_json;
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}])");
  const ojson messages = ojson::parse(R"([
    {"role": "user", "content": "find x"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"x\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "one"},
    {"role": "tool", "tool_call_id": "c2", "content": "two"}])");
  const ojson out = messages_for_template(messages, tools, ChatFormat{ToolSyntax::kHermes, false, false});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]["role"], "system");
  EXPECT_NE(out[0]["content"].get<std::string>().find("\"name\":\"search\""), std::string::npos);
  EXPECT_EQ(out[2]["content"], "<tool_call>\n{\"name\":\"search\",\"arguments\":{\"q\":\"x\"}}\n</tool_call>");
  EXPECT_EQ(out[3]["role"], "user");
  EXPECT_EQ(out[3]["content"], "<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response>");
  // A template with tools gets the messages as they are, arguments parsed into an object.
  const ojson same = messages_for_template(messages, tools, ChatFormat{ToolSyntax::kHermes, true, false});
  EXPECT_EQ(same[1]["tool_calls"][0]["function"]["arguments"]["q"], "x");
  EXPECT_EQ(same.size(), messages.size());
}

}  // namespace
}  // namespace brisk
