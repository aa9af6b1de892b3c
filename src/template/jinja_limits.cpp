#include "template/jinja_limits.hpp"

#include <algorithm>

#include "template/jinja_value.hpp"

namespace brisk::jinja {

void Budget::fail(ErrorCode code, const std::string& what) const {
  throw Error(code, "chat template line " + std::to_string(line) + ": " + what, "chat_template");
}

void Budget::step() {
  if (++steps_ > lim_.max_steps)
    fail(ErrorCode::kLimit, "the template ran more than " + std::to_string(lim_.max_steps) + " steps");
  if (lim_.cancel && lim_.cancel->load(std::memory_order_relaxed)) fail(ErrorCode::kLimit, "the render was cancelled");
}

void Budget::work(size_t units, const char* what) {
  work_ += int64_t(std::min<size_t>(units, size_t(INT64_MAX / 2)));
  if (work_ > lim_.max_work)
    fail(ErrorCode::kLimit, std::string("'") + what + "' takes the render past its work budget of " +
                                std::to_string(lim_.max_work) + " bytes (RenderLimits::max_work)");
}

void Budget::check_string(size_t bytes, const char* what) const {
  if (bytes > lim_.max_string_bytes)
    fail(ErrorCode::kLimit, std::string("'") + what + "' would build a string of " + std::to_string(bytes) +
                                " bytes, more than " + std::to_string(lim_.max_string_bytes) +
                                " (RenderLimits::max_string_bytes)");
}

void Budget::build_string(size_t bytes, const char* what) {
  check_string(bytes, what);
  work(bytes, what);
}

void Budget::build_list(size_t items, const char* what) {
  if (items > lim_.max_list_items)
    fail(ErrorCode::kLimit, std::string("'") + what + "' would build a list of " + std::to_string(items) +
                                " items, more than " + std::to_string(lim_.max_list_items) +
                                " (RenderLimits::max_list_items)");
  this->items(items, what);
}

void Budget::items(size_t items, const char* what) { work(items * sizeof(Value), what); }

}  // namespace brisk::jinja
