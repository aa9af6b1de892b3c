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

// A label value as the text format wants it: backslash, double quote and line feed escaped,
// so that no value can end its sample line or write samples of its own.
std::string label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// A metric of one unlabelled sample.
void single(std::string& out, const char* name, const char* type, const char* help, int64_t value) {
  metric(out, name, type, help);
  out += std::string(name) + " " + std::to_string(value) + "\n";
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

std::string Metrics::render(const EngineStats& s, bool ready) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  metric(out, "brisk_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    out += "brisk_requests_total{endpoint=\"" + label(key.first) + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  metric(out, "brisk_generations_total", "counter", "Generations finished, by finish reason.");
  for (const auto& [reason, n] : s.finished)
    out += "brisk_generations_total{finish_reason=\"" + label(reason) + "\"} " + std::to_string(n) + "\n";
  single(out, "brisk_prompt_tokens_total", "counter", "Prompt tokens of answered requests.", int64_t(prompt_tokens_));
  single(out, "brisk_generated_tokens_total", "counter",
         "Tokens generated for answered requests.", int64_t(generated_tokens_));
  metric(out, "brisk_time_to_first_token_seconds", "histogram", "From a request's arrival to its first token.");
  ttft_.write(out, "brisk_time_to_first_token_seconds");
  metric(out, "brisk_inter_token_latency_seconds", "histogram", "Between consecutive tokens of a stream.");
  itl_.write(out, "brisk_inter_token_latency_seconds");
  single(out, "brisk_queue_depth", "gauge", "Requests waiting for a slot or for KV blocks (preempted ones included).", int64_t(s.waiting));
  single(out, "brisk_running_sequences", "gauge", "Sequences in the running batch.", int64_t(s.running));
  single(out, "brisk_kv_slots_used", "gauge",
         "KV cache slots (one per running sequence) in use.", int64_t(s.running));
  single(out, "brisk_kv_slots_free", "gauge", "KV cache slots free.", int64_t(s.slots_total) - int64_t(s.running));
  single(out, "brisk_kv_blocks_used", "gauge",
         "KV cache blocks held by running sequences (shared blocks once).", int64_t(s.kv_blocks_used));
  single(out, "brisk_kv_blocks_free", "gauge",
         "KV cache blocks not held by any sequence (cached prefixes included).",
         int64_t(s.kv_blocks_total - s.kv_blocks_used));
  single(out, "brisk_kv_blocks_cached", "gauge",
         "Free KV cache blocks that still hold a reusable prompt prefix.", int64_t(s.kv_blocks_cached));
  single(out, "brisk_prefix_cache_queries_total", "counter",
         "Prompts looked up in the prefix cache.", int64_t(s.prefix_cache_queries));
  single(out, "brisk_prefix_cache_hits_total", "counter",
         "Prompts that reused at least one cached KV block.", int64_t(s.prefix_cache_hits));
  single(out, "brisk_prefix_cache_hit_tokens_total", "counter",
         "Prompt tokens taken from the prefix cache, not prefilled.", int64_t(s.prefix_cache_hit_tokens));
  single(out, "brisk_kv_positions_used", "gauge",
         "KV cache positions holding prompt or generated tokens.", int64_t(s.kv_positions_used));
  single(out, "brisk_kv_positions_total", "gauge", "KV cache positions in all.", int64_t(s.kv_positions_total));
  single(out, "brisk_preemptions_total", "counter",
         "Running sequences whose KV blocks were taken back when the pool ran dry (recomputed later).",
         int64_t(s.preemptions));
  metric(out, "brisk_ready", "gauge", "1 once the model is loaded.");
  out += std::string("brisk_ready ") + (ready ? "1" : "0") + "\n";
  return out;
}

}  // namespace brisk::server
