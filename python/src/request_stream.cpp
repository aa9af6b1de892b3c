#include "request_stream.hpp"

#include <chrono>

namespace brisk::python {

std::pair<Engine::TokenCallback, Engine::DoneCallback> RequestStream::callbacks(const std::shared_ptr<RequestStream>& s) {
  return {[s](const TokenEvent& e) { s->on_token(e); }, [s](const RequestResult& r) { s->on_done(r); }};
}

void RequestStream::attach(std::shared_ptr<RequestHandle> handle) {
  std::lock_guard<std::mutex> lock(mu_);
  handle_ = std::move(handle);
  if (cancel_asked_ && handle_) handle_->cancel();
}

void RequestStream::on_token(const TokenEvent& e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (keep_events_) {
    events_.push_back(e);
  } else {
    TokenEvent id_only;
    id_only.id = e.id;
    events_.push_back(std::move(id_only));
  }
  if (!e.text.empty()) {
    text_ += e.text;
    pieces_.push_back(e.text);
  }
  cv_.notify_all();
}

void RequestStream::on_done(const RequestResult& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!r.tail_text.empty()) {
    text_ += r.tail_text;
    pieces_.push_back(r.tail_text);
  }
  result_ = r;
  cv_.notify_all();
}

RequestStream::Got RequestStream::wait_piece(double timeout_s, std::string* piece) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto ready = [&] { return !pieces_.empty() || result_.has_value(); };
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), ready)) return Got::kTimeout;
  if (pieces_.empty()) return Got::kDone;
  *piece = std::move(pieces_.front());
  pieces_.pop_front();
  return Got::kPiece;
}

bool RequestStream::wait_done(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return result_.has_value(); });
}

void RequestStream::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_asked_ = true;
  if (handle_) handle_->cancel();
}

std::string RequestStream::text() const {
  std::lock_guard<std::mutex> lock(mu_);
  return text_;
}

std::vector<int32_t> RequestStream::token_ids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int32_t> ids;
  ids.reserve(events_.size());
  for (const TokenEvent& e : events_) ids.push_back(e.id);
  return ids;
}

RequestResult RequestStream::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_.value_or(RequestResult{});
}

std::vector<TokenEvent> RequestStream::token_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

}  // namespace brisk::python
