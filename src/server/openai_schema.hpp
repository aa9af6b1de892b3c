// The OpenAI API's JSON, both ways: request bodies of /v1/chat/completions and
// /v1/completions checked field by field and turned into an engine request (the chat
// messages rendered through the model's chat template and tokenized), and the response
// bodies and stream chunks in exactly OpenAI's shape. No HTTP here (http_server.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/brisk.hpp"

namespace brisk::server {

using ojson = nlohmann::ordered_json;

enum class Endpoint { Chat, Completion };

// A request body, validated. Bad fields throw brisk::Error(kInvalidArgument) whose where()
// is the field's name (the error body's "param").
struct ApiRequest {
  Endpoint endpoint = Endpoint::Chat;
  std::string model;
  std::vector<int32_t> prompt;
  GenerateOptions opts;  // opts.logprobs: -1 off, else alternatives per token
  bool stream = false;
  bool include_usage = false;
  // Chat answers read by ChatOutputParser into content, reasoning and tool calls: when the
  // request offers tools or the template thinks (else the text is the content, as written).
  bool parse_answer = false;
  ChatFormat format;
  std::vector<std::string> tool_names;
  bool reasoning_open = false;  // the prompt ends inside <think>
};

// The request body as JSON, refusing (Error kInvalidArgument) bodies that nest deeper than
// kMaxJsonDepth before the parser sees them: nesting costs the parser and destructor stack.
constexpr int kMaxJsonDepth = 64;
ojson parse_body(const std::string& body);

// What bounds the work of turning a body into a prompt.
struct PromptLimits {
  size_t bytes_per_token = 0;                 // Engine::max_bytes_per_token(): longer text is refused untokenized
  const std::atomic<bool>* cancel = nullptr;  // set: a chat template render stops (shutdown)
};

// The engine's positions per sequence bound the default max_tokens; a prompt that leaves no
// room to generate is refused (where = "messages" or "prompt").
ApiRequest parse_request(Endpoint endpoint, const ojson& body, const Engine& engine, const PromptLimits& limits = {});

// One generated token as the response shows it.
struct TokenOut {
  int32_t id = 0;
  std::string text;  // the token's own text (for logprobs), lossy UTF-8
  std::vector<uint8_t> bytes;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};

class ResponseBuilder {
 public:
  ResponseBuilder(Endpoint endpoint, std::string model_name, const Engine& engine);

  // The whole non-streamed response.
  ojson complete(const std::string& text, const std::vector<TokenOut>& tokens, bool logprobs,
                 const RequestResult& result) const;
  // Stream chunks: the first (chat: the assistant role), one per piece of text, the last
  // (finish_reason), and the usage chunk (include_usage).
  ojson first_chunk() const;
  ojson text_chunk(const std::string& text, const std::vector<TokenOut>& tokens, bool logprobs) const;
  ojson final_chunk(const std::string& finish_reason) const;
  // Parsed chat answers: the whole message (content null when there are only tool calls), and
  // one stream chunk per delta in OpenAI's shape (a call's index, id and name first, then
  // fragments of its arguments).
  ojson complete_chat(const ChatMessage& message, const std::vector<TokenOut>& tokens, bool logprobs,
                      const RequestResult& result) const;
  ojson delta_chunk(const ChatDelta& delta, const std::vector<TokenOut>& tokens, bool logprobs) const;
  ojson usage_chunk(const RequestResult& result) const;

  TokenOut token_out(const TokenEvent& e) const;
  const std::string& id() const { return id_; }

 private:
  ojson logprobs_json(const std::vector<TokenOut>& tokens, size_t text_offset) const;
  ojson envelope(bool chunk) const;

  Endpoint endpoint_;
  std::string model_name_;
  const Engine& engine_;
  std::string id_;
  int64_t created_;
};

// {"error": {"message", "type", "param", "code"}} as OpenAI writes it.
// JSON text; invalid UTF-8 (from a request echoed in a message) becomes U+FFFD, never an
// exception.
std::string dump(const ojson& j);

ojson error_body(const std::string& message, const std::string& type, const std::string& param = {},
                 const std::string& code = {});
// The HTTP status for a brisk::Error code.
int http_status(ErrorCode code);

}  // namespace brisk::server
