// StopMatcher: byte-wise search over held-back text plus the new piece.
// Matching bytes is enough for UTF-8: valid UTF-8 is self-synchronizing, so a stop
// string found in valid text starts on a character boundary, and so does every tail
// we hold back (it equals a prefix of a stop string). The held tail is shorter than
// the longest stop string, so each feed costs O((piece + longest stop) * stops).
#include "engine/stop.hpp"

#include <algorithm>

namespace brisk {

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {}

StopResult StopMatcher::feed(std::string_view piece) {
  if (stopped()) return {"", true, stop_index_};
  held_.append(piece);

  // The earliest occurrence wins; at the same start the shorter one completed first.
  size_t best_pos = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const std::string& s = stops_[i];
    if (s.empty()) continue;
    const size_t pos = held_.find(s);
    if (pos == std::string::npos) continue;
    if (pos < best_pos || (pos == best_pos && s.size() < stops_[stop_index_].size())) {
      best_pos = pos;
      stop_index_ = int(i);
    }
  }
  if (stopped()) {
    StopResult r{held_.substr(0, best_pos), true, stop_index_};
    held_.clear();
    return r;
  }

  // Hold the longest tail of held_ that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - (s.empty() ? 0 : 1), held_.size()); len > hold; --len) {
      if (std::string_view(held_).substr(held_.size() - len) == std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  StopResult r{held_.substr(0, held_.size() - hold), false, -1};
  held_.erase(0, held_.size() - hold);
  return r;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace brisk
