// One submitted request as Python sees it: the engine thread pushes its text pieces and its
// end here; Python threads wait on it with the GIL released, a timeout at a time, so that a
// KeyboardInterrupt or a cancel from another thread is seen promptly.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "brisk/brisk.hpp"

namespace brisk::python {

class RequestStream {
 public:
  // What wait_piece found.
  enum class Got { kTimeout = 0, kPiece = 1, kDone = 2 };

  // The callbacks to hand to Engine::submit; they hold this stream alive.
  static std::pair<Engine::TokenCallback, Engine::DoneCallback> callbacks(const std::shared_ptr<RequestStream>& s);
  void attach(std::shared_ptr<RequestHandle> handle);
  void keep_token_events(bool keep) { keep_events_ = keep; }  // logprobs: keep each token's event whole

  // The next text piece (into *piece), the end, or nothing within timeout_s seconds.
  Got wait_piece(double timeout_s, std::string* piece);
  bool wait_done(double timeout_s);  // true once the request has ended
  void cancel();

  // After the end: the whole text, the ids, and how it ended.
  std::string text() const;
  std::vector<int32_t> token_ids() const;
  RequestResult result() const;
  // Per token: (id, logprob, top alternatives) when logprobs were asked for.
  std::vector<TokenEvent> token_events() const;

 private:
  void on_token(const TokenEvent& e);
  void on_done(const RequestResult& r);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> pieces_;  // not yet taken by wait_piece
  std::string text_;
  std::vector<TokenEvent> events_;
  std::optional<RequestResult> result_;
  std::shared_ptr<RequestHandle> handle_;
  bool cancel_asked_ = false;
  bool keep_events_ = false;
};

}  // namespace brisk::python
