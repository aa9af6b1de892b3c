// What one render of a chat template may cost, and the meter that enforces it. A template
// comes from a model file and its variables from a request, so neither is trusted: every
// statement counts a step, every operator and builtin charges the bytes it scans or builds,
// no single string or list may outgrow a cap, and the caller may abandon a render at any
// step. Past a limit the render throws Error(kLimit) naming the operation and the limit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.hpp"

namespace brisk::jinja {

// Caps a render stays under, whatever the template and messages (Error kLimit past them).
// The defaults let real chat templates render conversations of several MB (tools, reasoning,
// content parts), while a template that doubles a string or list in a loop, or formats a
// value into gigabytes, stops at tens of MB.
struct RenderLimits {
  size_t max_output = 16u << 20;         // bytes of rendered text (and of each macro's or set block's)
  int max_depth = 200;                   // nested expressions and macro calls
  int64_t max_steps = 2'000'000;         // statements executed and loop iterations
  size_t max_string_bytes = 32u << 20;   // the longest string one operation may build
  size_t max_list_items = 1u << 18;      // the most items one operation may put in a list or dict
  int64_t max_work = int64_t(256) << 20; // bytes operators and builtins scan or build (a list item
                                         // counts as the bytes of one value), summed over the render:
                                         // bounds its time and memory (real templates spend 3-5
                                         // bytes per byte of messages)
  // When set, the render checks it at every step and throws Error(kLimit, "... cancelled")
  // once it reads true: a server shutting down stores true to abandon renders in progress.
  // The caller owns the flag and must keep it alive for the whole render.
  const std::atomic<bool>* cancel = nullptr;
};

// The meter of one render: counts steps and work against RenderLimits. Operators and
// builtins call it before they build a value, so a cap stops them before they allocate.
class Budget {
 public:
  explicit Budget(const RenderLimits& limits) : lim_(limits) {}

  const RenderLimits& limits() const { return lim_; }

  // The template line being evaluated, named in error messages.
  int line = 0;

  // One statement or loop iteration; also where cancellation is noticed.
  void step();
  // `units` bytes (or list items) scanned or built by `what`.
  void work(size_t units, const char* what);
  // Error(kLimit) when a string of `bytes` would pass the size cap.
  void check_string(size_t bytes, const char* what) const;
  // `what` is about to build a string of `bytes`: checks the size cap, then charges the work.
  void build_string(size_t bytes, const char* what);
  // `what` is about to build a list (or dict) of `items`: checks the item cap, then charges
  // the bytes of that many values.
  void build_list(size_t items, const char* what);
  // `what` copies or visits `items` values.
  void items(size_t items, const char* what);

  [[noreturn]] void fail(ErrorCode code, const std::string& what) const;

 private:
  const RenderLimits& lim_;
  int64_t steps_ = 0;
  int64_t work_ = 0;
};

}  // namespace brisk::jinja
