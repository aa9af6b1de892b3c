#include "server/request_reader.hpp"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>

namespace brisk::server {
namespace {

constexpr size_t kMaxChunkLine = 1024;  // a chunk's size line, extensions included

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c));
  });
}
bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
// A line without its LF and one CR before it; false when a CR or NUL is left inside (httplib
// splits on LF alone, so a stray CR could hide a header from the gate).
bool clean_line(std::string_view* line) {
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  return line->find('\r') == line->npos && line->find('\0') == line->npos;
}

// Digits only; a value above cap reads as cap + 1 (answered 413 either way).
bool parse_length(std::string_view v, size_t cap, size_t* out) {
  cap = std::min(cap, SIZE_MAX / 16);
  size_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = std::min(n * 10 + static_cast<size_t>(c - '0'), cap + 1);
  }
  *out = n;
  return !v.empty();
}

bool known_method(std::string_view m) {
  static constexpr std::string_view kKnown[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
  for (std::string_view k : kKnown)
    if (m == k) return true;
  return false;
}

// Headers the gate consumes or rewrites: the connection to the server behind is one
// request long, its body plain and sized by one Content-Length.
bool dropped_header(std::string_view name) {
  static constexpr std::string_view kDropped[] = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                                                  "content-length", "content-encoding", "te", "trailer", "upgrade",
                                                  "expect", kConnHeader};
  for (std::string_view h : kDropped)
    if (iequals(name, h)) return true;
  return false;
}

}  // namespace

RequestReader::Status RequestReader::refuse(int status, std::string why) {
  status_ = Status::kRefused, refusal_ = status, why_ = std::move(why);
  std::string().swap(in_), std::string().swap(body_), std::string().swap(head_);
  return status_;
}

RequestReader::Status RequestReader::feed(std::string_view bytes) {
  if (status_ != Status::kMore) return status_;
  received_ += bytes.size();
  in_.append(bytes);
  pos_ = 0;
  do {
    progressed_ = false;
    if (step() != Status::kMore) return status_;
  } while (progressed_);
  in_.erase(0, pos_);
  pos_ = 0;
  return status_;
}

RequestReader::Status RequestReader::step() {
  const size_t avail = in_.size() - pos_;
  switch (phase_) {
    case Phase::kHead: {
      // The head ends at its first empty line: "\n\n" or "\n\r\n".
      size_t end = in_.find('\n', scanned_ > 2 ? scanned_ - 2 : 0);
      while (end != in_.npos && !(in_.compare(end + 1, 1, "\n") == 0 || in_.compare(end + 1, 2, "\r\n") == 0))
        end = in_.find('\n', end + 1);
      const size_t term = end == in_.npos ? 0 : in_.compare(end + 1, 1, "\n") == 0 ? 2 : 3;
      if (end == in_.npos && in_.size() <= limits_.max_head_bytes) {
        scanned_ = in_.size();
        return status_;
      }
      if (end == in_.npos || end + term > limits_.max_head_bytes) {
        const size_t eol = in_.find('\n');
        const std::string cap = std::to_string(limits_.max_head_bytes);
        if (eol == in_.npos || eol > limits_.max_head_bytes) return refuse(414, "the request line exceeds " + cap + " bytes");
        return refuse(431, "the request headers exceed " + cap + " bytes");
      }
      pos_ = end + term;
      progressed_ = true;
      return parse_head(std::string_view(in_).substr(0, end + 1));
    }
    case Phase::kBody:
    case Phase::kChunkData: {
      const size_t want = phase_ == Phase::kBody ? body_len_ - body_.size() : chunk_left_;
      const size_t n = std::min(want, avail);
      body_.append(in_, pos_, n);
      pos_ += n;
      if (phase_ == Phase::kChunkData) chunk_left_ -= n;
      if (n < want) return status_;
      progressed_ = true;
      if (phase_ == Phase::kBody) return complete();
      phase_ = Phase::kChunkEnd;
      return status_;
    }
    case Phase::kChunkEnd: {  // the CRLF (or LF) after a chunk's data
      if (avail == 0 || (avail == 1 && in_[pos_] == '\r')) return status_;
      const size_t n = in_[pos_] == '\n' ? 1 : in_.compare(pos_, 2, "\r\n") == 0 ? 2 : 0;
      if (n == 0) return refuse(400, "a chunk of the body does not end with CRLF where its size says");
      pos_ += n;
      progressed_ = true;
      phase_ = Phase::kChunkSize;
      return status_;
    }
    case Phase::kChunkSize: return chunk_size_line();
    case Phase::kTrailers: return trailer_line();
    case Phase::kDone: return status_;
  }
  return status_;
}

bool RequestReader::next_line(std::string_view* line, size_t cap, bool* over) {
  const size_t nl = in_.find('\n', pos_);
  if (nl == in_.npos) {
    *over = in_.size() - pos_ > cap;
    return false;
  }
  *over = nl - pos_ > cap;
  *line = std::string_view(in_).substr(pos_, nl - pos_);
  pos_ = nl + 1;
  progressed_ = true;
  return true;
}

RequestReader::Status RequestReader::chunk_size_line() {
  std::string_view line;
  bool over = false;
  const bool got = next_line(&line, kMaxChunkLine, &over);
  if (over) return refuse(400, "a chunk size line is longer than " + std::to_string(kMaxChunkLine) + " bytes");
  if (!got) return status_;
  if (!clean_line(&line)) return refuse(400, "a chunk size line contains a stray CR or NUL byte");
  size_t size = 0, digits = 0;
  // The cap is checked as the sizes come (clamped so that size * 16 cannot overflow).
  const size_t room = std::min(limits_.max_body_bytes - body_.size(), SIZE_MAX / 32);
  for (; digits < line.size() && std::isxdigit(static_cast<unsigned char>(line[digits])); ++digits) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(line[digits])));
    size = std::min(size * 16 + static_cast<size_t>(c <= '9' ? c - '0' : c - 'a' + 10), room + 1);
  }
  const std::string_view rest = trim(line.substr(digits));
  if (digits == 0 || (!rest.empty() && rest.front() != ';')) return refuse(400, "malformed chunk size line");
  if (size > room) return refuse(413, "the request body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes");
  chunk_left_ = size;
  phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
  return status_;
}

RequestReader::Status RequestReader::trailer_line() {
  std::string_view line;
  bool over = false;
  const bool got = next_line(&line, limits_.max_head_bytes, &over);
  if (over || trailer_bytes_ + line.size() > limits_.max_head_bytes)
    return refuse(431, "the body's trailers exceed " + std::to_string(limits_.max_head_bytes) + " bytes");
  if (!got) return status_;
  trailer_bytes_ += line.size() + 1;
  if (!clean_line(&line)) return refuse(400, "a trailer line contains a stray CR or NUL byte");
  if (line.empty()) return complete();
  const size_t colon = line.find(':');
  if (colon == line.npos || !is_token(line.substr(0, colon))) return refuse(400, "malformed trailer line");
  return status_;  // trailers are dropped: nothing behind the gate reads them
}

RequestReader::Status RequestReader::parse_head(std::string_view head) {
  std::string_view line = head.substr(0, head.find('\n'));
  head.remove_prefix(line.size() + 1);
  if (!clean_line(&line)) return refuse(400, "the request line contains a stray CR or NUL byte");
  const size_t sp1 = line.find(' '), sp2 = sp1 == line.npos ? line.npos : line.find(' ', sp1 + 1);
  if (sp2 == line.npos || line.find(' ', sp2 + 1) != line.npos) return refuse(400, "malformed request line");
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  const bool target_ok = !target.empty() && std::none_of(target.begin(), target.end(), [](char c) {
    return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
  });
  if (!is_token(method) || !target_ok || version.size() != 8 || version.compare(0, 5, "HTTP/") != 0)
    return refuse(400, "malformed request line");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return refuse(505, "only HTTP/1.1 and HTTP/1.0 are served");
  if (!known_method(method))
    return refuse(501, "the method '" + std::string(method) + "' is not supported (methods are upper case: GET, POST, ...)");
  method_ = method;
  http10_ = version == "HTTP/1.0";
  head_.append(line).append("\r\n");

  bool chunked = false, have_len = false;
  while (!head.empty()) {
    std::string_view hl = head.substr(0, head.find('\n'));
    head.remove_prefix(std::min(head.size(), hl.size() + 1));
    if (!clean_line(&hl)) return refuse(400, "a header line contains a stray CR or NUL byte");
    if (parse_header(hl, &chunked, &have_len) != Status::kMore) return status_;
  }
  return after_head(chunked, have_len);
}

RequestReader::Status RequestReader::parse_header(std::string_view hl, bool* chunked, bool* have_len) {
  const size_t colon = hl.find(':');
  if (colon == hl.npos || !is_token(hl.substr(0, colon))) return refuse(400, "malformed header line");
  const std::string_view name = hl.substr(0, colon), value = trim(hl.substr(colon + 1));
  if (iequals(name, "content-length")) {
    size_t len = 0;
    if (!parse_length(value, limits_.max_body_bytes, &len)) return refuse(400, "invalid Content-Length header");
    if (*have_len && len != body_len_) return refuse(400, "conflicting Content-Length headers");
    *have_len = true, body_len_ = len;
  } else if (iequals(name, "transfer-encoding")) {
    if (*chunked || !iequals(value, "chunked"))
      return refuse(501, "Transfer-Encoding '" + std::string(value) + "' is not supported (only chunked)");
    if (http10_) return refuse(400, "Transfer-Encoding is not allowed in an HTTP/1.0 request");
    *chunked = true;
  } else if (iequals(name, "content-encoding") && !value.empty() && !iequals(value, "identity")) {
    // A compressed body is refused whole: inflating it could exceed the body cap many times over.
    return refuse(415, "compressed request bodies (Content-Encoding: " + std::string(value) +
                           ") are not accepted; send the body uncompressed");
  } else if (iequals(name, "expect") && iequals(value, "100-continue")) {
    expect_continue_ = !http10_;  // the gate answers it, so it is not passed on
  }
  if (!dropped_header(name)) head_.append(hl).append("\r\n");
  return status_;
}

RequestReader::Status RequestReader::after_head(bool chunked, bool have_len) {
  if (chunked && have_len) return refuse(400, "a request may not have both Content-Length and Transfer-Encoding");
  const bool has_body_method = method_ == "POST" || method_ == "PUT" || method_ == "PATCH";
  if (!chunked && !have_len && has_body_method)
    return refuse(411, "a " + method_ + " needs a Content-Length header (or Transfer-Encoding: chunked)");
  if (body_len_ > limits_.max_body_bytes)
    return refuse(413, "the request body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes");
  sized_ = chunked || have_len || has_body_method;
  phase_ = chunked ? Phase::kChunkSize : Phase::kBody;
  return !chunked && body_len_ == 0 ? complete() : status_;
}

RequestReader::Status RequestReader::complete() {
  phase_ = Phase::kDone;
  status_ = Status::kDone;
  if (sized_) head_ += "Content-Length: " + std::to_string(body_.size()) + "\r\n";
  head_ += "Connection: close\r\n\r\n";
  head_ += body_;
  std::string().swap(body_), std::string().swap(in_);
  return status_;
}

std::string RequestReader::take_request() { return std::move(head_); }

}  // namespace brisk::server
