// A record of each engine step, for finding where a request's time goes (brisk serve
// --trace-steps FILE): one JSON line per step that did work, with the queue, the prefill
// pass and the decode step it ran and how long the host waited on each. Off (no file) by
// default; writing a line costs a few microseconds of the engine thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "brisk/types.hpp"

namespace brisk {


class StepTrace {
 public:
  StepTrace() = default;
  ~StepTrace();
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

  // Starts writing to `path` (truncated); throws brisk::Error when it cannot be opened.
  void open(const std::string& path);
  bool on() const { return file_ != nullptr; }
  // Seconds since open(), on the steady clock.
  double clock() const;
  void write(const StepRecord& r);

 private:
  std::FILE* file_ = nullptr;
  double t0_ = 0;
};

}  // namespace brisk
