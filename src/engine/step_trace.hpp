// A record of each scheduler step, for finding where a request's time goes (brisk serve
// --trace-steps FILE): one JSON line per step that did work, with the queue, the prefill
// pass and the decode step it ran and how long the host waited on each. Off (no file) by
// default; writing a line costs a few microseconds of the engine thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace brisk {

struct StepRecord {
  double t = 0;                // seconds since the trace began, at the step's start
  int64_t waiting = 0;         // requests waiting after admission
  int64_t running = 0;         // sequences holding a slot after admission
  int64_t admitted = 0;        // given a slot this step
  int64_t prefill_parts = 0;   // prompts in this step's prefill pass
  int64_t prefill_tokens = 0;
  int64_t first_tokens = 0;    // prompts that completed (their first token sampled)
  double prefill_ms = 0;       // the pass, launch to ids on the host
  int64_t decode_rows = 0;     // rows of the decode step launched this step
  double collect_ms = 0;       // waiting for the previous decode step's ids
  double hand_out_ms = 0;      // detokenizing, stop strings and streaming the collected ids
  double step_ms = 0;
};

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
