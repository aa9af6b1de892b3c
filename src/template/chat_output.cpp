// ChatOutputParser (brisk/chat.hpp): a small state machine over the answer's text. It holds
// back only what could still turn out to be a tag (a partial "<tool_call>" or "</think>") or
// whitespace at a segment's end, so content streams as it comes; a tool call streams its id
// and name once the name is complete, then its arguments as they are written.
#include <algorithm>
#include <utility>

#include "base/random_id.hpp"
#include "brisk/chat.hpp"
#include "template/call_scan.hpp"

namespace brisk {
namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The length of the longest end of s that is a proper start of tag (it may yet become the tag).
size_t partial_tag(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

ChatMessage ChatMessage::from(const std::vector<ChatDelta>& deltas) {
  ChatMessage m;
  for (const ChatDelta& d : deltas) {
    switch (d.kind) {
      case ChatDelta::Kind::kContent: m.content += d.text; break;
      case ChatDelta::Kind::kReasoning: m.reasoning += d.text; break;
      case ChatDelta::Kind::kToolCall: m.tool_calls.push_back({d.id, d.name, ""}); break;
      case ChatDelta::Kind::kToolArguments:
        if (d.index >= 0 && size_t(d.index) < m.tool_calls.size()) m.tool_calls[size_t(d.index)].arguments += d.text;
        break;
    }
  }
  return m;
}

ChatOutputParser::ChatOutputParser(const ChatFormat& format, std::vector<std::string> tool_names, bool reasoning_open)
    : format_(format), tools_(std::move(tool_names)) {
  if (format_.reasoning && reasoning_open) mode_ = Mode::kReasoning;
  calls_possible_ = !tools_.empty();
}

std::vector<ChatDelta> ChatOutputParser::feed(std::string_view text) {
  buf_ += text;
  while (step()) {
  }
  return std::exchange(out_, {});
}

std::vector<ChatDelta> ChatOutputParser::finish() {
  final_ = true;
  while (step()) {
  }
  if (mode_ == Mode::kCall && !call_started_) fall_back_to_content();
  if (!buf_.empty()) emit(mode_ == Mode::kReasoning ? ChatDelta::Kind::kReasoning : ChatDelta::Kind::kContent,
                          mode_ == Mode::kReasoning ? reasoning_ : content_, std::exchange(buf_, {}));
  return std::exchange(out_, {});
}

void ChatOutputParser::emit(ChatDelta::Kind kind, Segment& seg, std::string_view text) {
  if (!seg.started) {
    text = ltrim(text);
    if (text.empty()) return;
    seg.started = true;
  }
  size_t body = text.size();
  while (body > 0 && is_space(text[body - 1])) --body;
  if (body == 0) {
    seg.pending_space += text;
    return;
  }
  ChatDelta d;
  d.kind = kind;
  d.text = std::exchange(seg.pending_space, {});
  d.text += text.substr(0, body);
  seg.pending_space = std::string(text.substr(body));
  out_.push_back(std::move(d));
}

bool ChatOutputParser::step() {
  switch (mode_) {
    case Mode::kStart: return step_start();
    case Mode::kReasoning: return step_reasoning();
    case Mode::kContent: return step_content();
    case Mode::kCall: return step_call();
  }
  return false;
}

// The answer's start: a think block (templates with reasoning), a Llama 3 call, or content.
bool ChatOutputParser::step_start() {
  const std::string_view head = ltrim(buf_);
  if (format_.reasoning) {
    if (starts_with(head, kThinkOpen)) {
      buf_.erase(0, buf_.size() - head.size() + kThinkOpen.size());
      mode_ = Mode::kReasoning;
      return true;
    }
    if (!final_ && starts_with(kThinkOpen, head)) return false;  // it may yet open one
  }
  mode_ = Mode::kContent;
  return true;
}

// Emits buf_ as far as `tag` (holding back a partial one) and drops the tag: false when the
// tag has not come yet.
bool ChatOutputParser::emit_before(std::string_view tag, ChatDelta::Kind kind, Segment& seg) {
  const size_t at = buf_.find(tag);
  const size_t upto = at != std::string::npos ? at : buf_.size() - (final_ ? 0 : partial_tag(buf_, tag));
  emit(kind, seg, std::string_view(buf_).substr(0, upto));
  buf_.erase(0, at != std::string::npos ? at + tag.size() : upto);
  return at != std::string::npos;
}

bool ChatOutputParser::step_reasoning() {
  if (!emit_before(kThinkClose, ChatDelta::Kind::kReasoning, reasoning_)) return false;
  reasoning_.pending_space.clear();
  mode_ = Mode::kContent;
  calls_possible_ = !tools_.empty();  // (a Llama 3 call may follow the thinking)
  return true;
}

bool ChatOutputParser::step_content() {
  if (!calls_possible_) {
    emit(ChatDelta::Kind::kContent, content_, buf_);
    buf_.clear();
    return false;
  }
  if (format_.tool_syntax == ToolSyntax::kLlama3Json) {  // a call is the whole answer, or none is
    const std::string_view head = ltrim(buf_);
    const size_t space = buf_.size() - head.size();
    for (std::string_view opener : {kPythonTag, std::string_view("{")}) {
      if (starts_with(head, opener)) {
        call_opener_ = buf_.substr(0, space + (opener == "{" ? 0 : opener.size()));
        buf_.erase(0, call_opener_.size());
        mode_ = Mode::kCall;
        return true;
      }
    }
    if (!final_ && (head.empty() || starts_with(kPythonTag, head))) return false;
    calls_possible_ = false;  // content: no call after it
    return true;
  }
  if (!emit_before(kCallOpen, ChatDelta::Kind::kContent, content_)) return false;
  call_opener_ = std::string(kCallOpen);
  mode_ = Mode::kCall;
  return true;
}

// Inside a call: its object is rescanned as it grows; the id and name go out once the name
// is known, the arguments as far as they are written.
bool ChatOutputParser::step_call() {
  call_text_ += buf_;
  buf_.clear();
  const size_t lead = call_text_.size() - ltrim(call_text_).size();
  const CallScan scan = scan_call(std::string_view(call_text_).substr(lead), final_);
  const bool complete = scan.status == CallScan::Status::kComplete;
  const bool known = scan.name && std::find(tools_.begin(), tools_.end(), *scan.name) != tools_.end();
  // A call starts once its name and the opening of its arguments object are written, however
  // the text was cut into pieces: what comes after cannot unmake it.
  const bool startable = known && (complete || scan.args_is_object);
  if (!call_started_ && !startable && (scan.status == CallScan::Status::kInvalid || (scan.name && !known))) {
    fall_back_to_content();
    return true;
  }
  if (!call_started_ && startable) {
    ChatDelta d;
    d.kind = ChatDelta::Kind::kToolCall;
    d.index = calls_;
    d.id = random_id("call_");
    d.name = *scan.name;
    out_.push_back(std::move(d));
    call_started_ = true;
    args_sent_ = scan.args_begin == std::string::npos ? 0 : lead + scan.args_begin;
  }
  if (call_started_ && scan.args_begin != std::string::npos) {
    // Arguments that are an object stream as written; any other value goes out once whole.
    size_t upto = scan.args_end != std::string::npos ? lead + scan.args_end
                  : scan.args_is_object ? call_text_.size() : args_sent_;
    if (upto > args_sent_) {
      ChatDelta d;
      d.kind = ChatDelta::Kind::kToolArguments;
      d.index = calls_;
      d.text = call_text_.substr(args_sent_, upto - args_sent_);
      out_.push_back(std::move(d));
      args_sent_ = upto;
    }
  }
  if (complete) return after_call(lead + scan.end);
  if (scan.status == CallScan::Status::kInvalid) {  // a call cut short: what follows is content
    buf_ = call_text_.substr(args_sent_);
    return after_call(call_text_.size());
  }
  return false;
}

// After a call's object: Hermes closes it with </tool_call>; Llama 3 may go on with `;` and
// another call. Anything else is content again.
bool ChatOutputParser::after_call(size_t end) {
  std::string rest = call_text_.substr(end) + buf_;
  const std::string_view head = ltrim(rest);
  if (format_.tool_syntax == ToolSyntax::kHermes) {
    if (!final_ && starts_with(kCallClose, head) && head.size() < kCallClose.size()) {
      call_text_.resize(end);  // wait for the rest of the closing tag
      buf_ = rest;
      return false;
    }
    rest = starts_with(head, kCallClose) ? std::string(head.substr(kCallClose.size())) : std::string(head);
  } else {
    if (!final_ && head.empty()) {
      call_text_.resize(end);
      buf_ = rest;
      return false;
    }
    rest = starts_with(head, ";") ? std::string(head.substr(1)) : std::string(head);
  }
  buf_ = std::move(rest);
  call_text_.clear();
  call_started_ = false;
  args_sent_ = 0;
  ++calls_;
  content_.pending_space.clear();
  mode_ = Mode::kContent;
  return true;
}

// What opened as a call is none: its text, opener included, is content, and no call is looked
// for again in it.
void ChatOutputParser::fall_back_to_content() {
  emit(ChatDelta::Kind::kContent, content_, call_opener_ + call_text_ + buf_);
  call_text_.clear();
  buf_.clear();
  call_opener_.clear();
  calls_possible_ = format_.tool_syntax == ToolSyntax::kHermes;
  mode_ = Mode::kContent;
}

bool prompt_opens_reasoning(const ChatFormat& format, std::string_view prompt) {
  while (!prompt.empty() && is_space(prompt.back())) prompt.remove_suffix(1);
  return format.reasoning && prompt.size() >= kThinkOpen.size() &&
         prompt.substr(prompt.size() - kThinkOpen.size()) == kThinkOpen;
}

}  // namespace brisk
