#include "server/metrics.hpp"

#include <cstdio>

namespace brisk::server {
namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void Histogram::observe(double s) {
  for (size_t i = 0; i < kBounds.size(); ++i)
    if (s <= kBounds[i]) ++counts_[i];
  ++count_;
  sum_ += s;
}

void Histogram::write(std::string& out, const std::string& name) const {
  for (size_t i = 0; i < kBounds.size(); ++i)
    out += name + "_bucket{le=\"" + num(kBounds[i]) + "\"} " + std::to_string(counts_[i]) + "\n";
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

void Metrics::request_done(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}
void Metrics::first_token(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(s);
}
void Metrics::inter_token(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(s);
}
void Metrics::tokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += uint64_t(prompt);
  generated_tokens_ += uint64_t(generated);
}

std::string Metrics::render(const SchedulerStats& s, bool ready) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  metric(out, "brisk_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    out += "brisk_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  metric(out, "brisk_generations_total", "counter", "Generations finished, by finish reason.");
  for (const auto& [reason, n] : s.finished)
    out += "brisk_generations_total{finish_reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  metric(out, "brisk_prompt_tokens_total", "counter", "Prompt tokens of answered requests.");
  out += "brisk_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  metric(out, "brisk_generated_tokens_total", "counter", "Tokens generated for answered requests.");
  out += "brisk_generated_tokens_total " + std::to_string(generated_tokens_) + "\n";
  metric(out, "brisk_time_to_first_token_seconds", "histogram", "From a request's arrival to its first token.");
  ttft_.write(out, "brisk_time_to_first_token_seconds");
  metric(out, "brisk_inter_token_latency_seconds", "histogram", "Between consecutive tokens of a stream.");
  itl_.write(out, "brisk_inter_token_latency_seconds");
  metric(out, "brisk_queue_depth", "gauge", "Requests waiting for a KV slot.");
  out += "brisk_queue_depth " + std::to_string(s.waiting) + "\n";
  metric(out, "brisk_running_sequences", "gauge", "Sequences in the running batch.");
  out += "brisk_running_sequences " + std::to_string(s.running) + "\n";
  metric(out, "brisk_kv_slots_used", "gauge", "KV cache slots (one per running sequence) in use.");
  out += "brisk_kv_slots_used " + std::to_string(s.slots_used) + "\n";
  metric(out, "brisk_kv_slots_free", "gauge", "KV cache slots free.");
  out += "brisk_kv_slots_free " + std::to_string(s.slots_total - s.slots_used) + "\n";
  metric(out, "brisk_kv_positions_used", "gauge", "KV cache positions holding prompt or generated tokens.");
  out += "brisk_kv_positions_used " + std::to_string(s.kv_positions_used) + "\n";
  metric(out, "brisk_kv_positions_total", "gauge", "KV cache positions in all.");
  out += "brisk_kv_positions_total " + std::to_string(s.kv_positions_total) + "\n";
  metric(out, "brisk_ready", "gauge", "1 once the model is loaded.");
  out += std::string("brisk_ready ") + (ready ? "1" : "0") + "\n";
  return out;
}

}  // namespace brisk::server
