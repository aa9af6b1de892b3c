// Serving metrics in Prometheus' text format (version 0.0.4): requests by endpoint and
// status, prompt and generated tokens, time to first token and time between tokens as
// histograms, and the scheduler's gauges (queue, running, KV slots and positions).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "brisk/types.hpp"

namespace brisk::server {

class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                     1,     2.5,  5,     10,   30,  60,  120};
  void observe(double seconds);
  // Appends name_bucket / _sum / _count lines.
  void write(std::string& out, const std::string& name) const;

 private:
  std::array<uint64_t, kBounds.size()> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  // endpoint: a route's path, "other" or "gate" (route_label in http_common.hpp), never a
  // path a client made up: each label value is a series kept for the process's life.
  // Label values are escaped as the text format says either way.
  void request_done(const std::string& endpoint, int status);
  void first_token(double seconds);
  void inter_token(double seconds);
  void tokens(int64_t prompt, int64_t generated);
  std::string render(const EngineStats& s, bool ready) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  Histogram ttft_, itl_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
};

}  // namespace brisk::server
