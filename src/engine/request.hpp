// A generation request as the engine takes it (already tokenized), and what it reports
// back: one event per generated token (the text it completes, UTF-8-safe and with stop
// strings held back) and exactly one final result. The callbacks run on the engine thread,
// so they must be quick (hand the event to the waiting connection and return).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "brisk/types.hpp"

namespace brisk {

struct Request {
  std::vector<int32_t> prompt;
  GenerateOptions opts;
  std::function<void(const TokenEvent&)> on_token;
  std::function<void(const RequestResult&)> on_done;
  // Set from any thread; the engine frees the request's cache at its next step.
  std::atomic<bool> cancelled{false};
};

}  // namespace brisk
