// A tolerant scan of a tool call's JSON object as it streams in ({"name": ..., "arguments":
// {...}}, keys in any order): where the name and the arguments are, whether the object is
// complete, still growing, or not a call at all. ChatOutputParser rescans a call's text at
// each new piece; calls are short, so this costs little.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace brisk {

struct CallScan {
  enum class Status { kIncomplete, kComplete, kInvalid };
  Status status = Status::kIncomplete;
  std::optional<std::string> name;       // once its string is complete
  size_t args_begin = std::string::npos;  // the arguments value's text, once it starts...
  size_t args_end = std::string::npos;    // ...and ends
  bool args_is_object = false;
  size_t end = std::string::npos;        // just past the closing brace (kComplete)
};

// s starts at the object's '{' (after any space). final: no more text will come.
CallScan scan_call(std::string_view s, bool final);

// The end of the JSON value starting at s[i] (s[i] not a space): kNeedMore when s stops
// inside it, kBad when it is not JSON.
constexpr size_t kNeedMore = std::string::npos, kBad = std::string::npos - 1;
size_t scan_json_value(std::string_view s, size_t i, bool final);

}  // namespace brisk
