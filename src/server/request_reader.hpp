// The gate's HTTP/1.1 request parser, without sockets: bytes go in as they arrive, and out
// comes either a refusal (status and reason) or the whole request rewritten for the server
// behind: CRLF line ends, hop-by-hop headers dropped, a chunked body de-chunked, the body's
// length in one Content-Length, `Connection: close`. What it accepts and refuses:
//  - bare LF line ends are taken as CRLF (as most servers do); a stray CR or a NUL is a 400;
//  - methods other than GET HEAD POST PUT DELETE OPTIONS PATCH (TRACE, CONNECT, lowercase
//    spellings) are a 501;
//  - a POST, PUT or PATCH with neither Content-Length nor chunked Transfer-Encoding is a 411;
//  - a chunked body is de-chunked under the same cap as any other body (413 past it);
//    Transfer-Encoding other than `chunked`, or with Content-Length beside it, is a 501/400;
//  - a Content-Encoding other than identity (a gzip body could inflate far past the body
//    cap) is a 415: nothing behind the gate ever sees a compressed body;
//  - a head over max_head_bytes is a 414 (the request line) or a 431 (the headers).
// Fuzzed by tests/fuzz/http_gate_fuzz.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brisk::server {

// The header by which the gate tells the server behind which client connection a request
// came from (see Gate::connected); a client's own header of this name is dropped.
inline constexpr std::string_view kConnHeader = "X-Brisk-Conn";

struct RequestLimits {
  size_t max_head_bytes = 16384;  // request line and headers (and a chunked body's trailers)
  size_t max_body_bytes = 4u << 20;
};

class RequestReader {
 public:
  enum class Status { kMore, kDone, kRefused };

  explicit RequestReader(RequestLimits limits) : limits_(limits) {}

  // Takes the next bytes of the connection. Once kDone or kRefused, more bytes are ignored.
  Status feed(std::string_view bytes);
  Status status() const { return status_; }

  size_t received() const { return received_; }  // bytes fed so far
  bool head_done() const { return phase_ != Phase::kHead; }
  // The head asked for `Expect: 100-continue` (HTTP/1.1) and the body has not all arrived.
  bool wants_continue() const { return expect_continue_ && status_ == Status::kMore && head_done(); }

  // kRefused: the status to answer and why.
  int refusal() const { return refusal_; }
  const std::string& why() const { return why_; }

  // kDone: the request as the server behind gets it (head and body). Moves it out.
  std::string take_request();
  const std::string& method() const { return method_; }

 private:
  enum class Phase { kHead, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailers, kDone };
  Status refuse(int status, std::string why);
  Status parse_head(std::string_view head);
  Status parse_header(std::string_view line, bool* chunked, bool* have_len);
  Status after_head(bool chunked, bool have_len);
  Status step();  // one phase's worth of work on in_; kMore with nothing left to do ends feed()
  bool next_line(std::string_view* line, size_t cap, bool* over);
  Status chunk_size_line();
  Status trailer_line();
  Status complete();

  RequestLimits limits_;
  Status status_ = Status::kMore;
  Phase phase_ = Phase::kHead;
  std::string in_;      // bytes not yet consumed (from pos_ on, during a feed)
  size_t pos_ = 0;
  size_t scanned_ = 0;  // head: bytes of in_ already searched for its end
  size_t received_ = 0;
  size_t body_len_ = 0, chunk_left_ = 0, trailer_bytes_ = 0;
  bool expect_continue_ = false, progressed_ = false, http10_ = false;
  bool sized_ = false;  // the forwarded head carries a Content-Length
  int refusal_ = 0;
  std::string why_, method_;
  std::string head_;  // rewritten head, without its Content-Length and final empty line
  std::string body_;
};

}  // namespace brisk::server
