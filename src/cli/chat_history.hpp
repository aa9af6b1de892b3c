// The conversation of brisk chat as OpenAI-style messages (what the chat template renders):
// an optional system message first, then user and assistant turns; saved to and loaded
// from a JSON file of that list.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace brisk::cli {

class ChatHistory {
 public:
  void set_system(const std::string& text);  // empty: no system message
  void add(const std::string& role, const std::string& content);
  void reset();                               // the turns go; the system message stays
  // Drops the oldest user turn and the answer after it; false when only the newest turn is left.
  bool drop_oldest_turn();
  void drop_last();                           // the newest message (a turn that could not run)
  size_t turns() const;                       // user messages
  std::string json() const { return messages_.dump(); }
  // A JSON list of {role, content} messages (or an object holding one as "messages").
  void save(const std::string& path) const;
  void load(const std::string& path);         // throws Error with what is wrong with the file

 private:
  bool has_system() const;
  nlohmann::json messages_ = nlohmann::json::array();
};

}  // namespace brisk::cli
