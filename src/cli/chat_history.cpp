#include "cli/chat_history.hpp"

#include <fstream>

#include "brisk/error.hpp"

namespace brisk::cli {
namespace {
nlohmann::json message(const std::string& role, const std::string& content) {
  nlohmann::json m = nlohmann::json::object();
  m["role"] = role;
  m["content"] = content;
  return m;
}
}  // namespace

bool ChatHistory::has_system() const { return !messages_.empty() && messages_[0]["role"] == "system"; }

void ChatHistory::set_system(const std::string& text) {
  if (has_system()) messages_.erase(messages_.begin());
  if (!text.empty()) messages_.insert(messages_.begin(), message("system", text));
}

void ChatHistory::add(const std::string& role, const std::string& content) {
  messages_.push_back(message(role, content));
}

void ChatHistory::reset() {
  nlohmann::json kept = nlohmann::json::array();
  if (has_system()) kept.push_back(messages_[0]);
  messages_ = std::move(kept);
}

size_t ChatHistory::turns() const {
  size_t n = 0;
  for (const auto& m : messages_) n += m["role"] == "user";
  return n;
}

bool ChatHistory::drop_oldest_turn() {
  if (turns() < 2) return false;
  const size_t first = has_system() ? 1 : 0;
  size_t end = first + 1;  // the oldest user message and everything up to the next one
  while (end < messages_.size() && messages_[end]["role"] != "user") ++end;
  messages_.erase(messages_.begin() + ptrdiff_t(first), messages_.begin() + ptrdiff_t(end));
  return true;
}

void ChatHistory::drop_last() {
  if (!messages_.empty()) messages_.erase(messages_.end() - 1);
}

void ChatHistory::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorCode::kIo, "cannot write the file", path);
  out << messages_.dump(2) << "\n";
  if (!out) throw Error(ErrorCode::kIo, "cannot write the file", path);
}

void ChatHistory::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot read the file", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw Error(ErrorCode::kInvalidArgument, "not JSON", path);
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array()) throw Error(ErrorCode::kInvalidArgument, "expected a list of messages", path);
  for (const auto& m : j) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw Error(ErrorCode::kInvalidArgument, "each message needs a string role and a string content", path);
    const std::string role = m["role"];
    if (role != "system" && role != "user" && role != "assistant")
      throw Error(ErrorCode::kInvalidArgument, "unknown role '" + role + "' (system, user or assistant)", path);
  }
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& m : j) kept.push_back(message(m["role"], m["content"]));
  messages_ = std::move(kept);
}

}  // namespace brisk::cli
