#include "engine/step_trace.hpp"

#include <chrono>
#include <cstring>

#include "base/error.hpp"

namespace brisk {
namespace {

double seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

StepTrace::~StepTrace() {
  if (file_) std::fclose(file_);
}

void StepTrace::open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw Error(ErrorCode::kIo, "cannot write the step trace " + path + ": " + std::strerror(errno), "--trace-steps");
  t0_ = seconds();
}

double StepTrace::clock() const { return seconds() - t0_; }

void StepTrace::write(const StepRecord& r) {
  if (!file_) return;
  std::fprintf(file_,
               "{\"t\":%.6f,\"waiting\":%lld,\"running\":%lld,\"admitted\":%lld,\"preempted\":%lld,"
               "\"prefill_parts\":%lld,"
               "\"prefill_tokens\":%lld,\"first_tokens\":%lld,\"prefill_ms\":%.3f,\"decode_rows\":%lld,"
               "\"collect_ms\":%.3f,\"hand_out_ms\":%.3f,\"mask_ms\":%.3f,\"step_ms\":%.3f}\n",
               r.t, static_cast<long long>(r.waiting), static_cast<long long>(r.running),
               static_cast<long long>(r.admitted), static_cast<long long>(r.preempted), static_cast<long long>(r.prefill_parts),
               static_cast<long long>(r.prefill_tokens), static_cast<long long>(r.first_tokens), r.prefill_ms,
               static_cast<long long>(r.decode_rows), r.collect_ms, r.hand_out_ms, r.mask_ms, r.step_ms);
  std::fflush(file_);
}

}  // namespace brisk
