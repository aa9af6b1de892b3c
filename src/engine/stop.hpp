// Stop strings over streamed text. Generated text arrives in pieces (one per token,
// already UTF-8-safe from the detokenizer); a stop string can span pieces, so the
// matcher holds back any tail that could still become a stop string and emits the
// rest at once. The stop string itself and everything after it are never emitted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisk {

struct StopResult {
  std::string text;      // safe to emit now
  bool stopped = false;  // a stop string was hit: text is all that remains, generation ends
  int stop_index = -1;   // which of the constructor's stop strings, when stopped
};

class StopMatcher {
 public:
  // Empty strings in the list are ignored; an empty list passes text straight through.
  explicit StopMatcher(std::vector<std::string> stop_strings);

  // After a stop, further pieces are swallowed: {"", true, same index}.
  StopResult feed(std::string_view piece);

  // End of generation without a stop: the held-back text, which is ordinary output.
  std::string flush();

  bool stopped() const { return stop_index_ >= 0; }

 private:
  std::vector<std::string> stops_;  // as given, empties included, so indices match
  std::string held_;
  int stop_index_ = -1;
};

}  // namespace brisk
