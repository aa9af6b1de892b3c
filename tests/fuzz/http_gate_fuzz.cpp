// The gate's request parser (server/request_reader.hpp) on raw bytes: request lines,
// headers, Content-Length, chunked and compressed bodies, arriving in pieces of any size.
// Input: byte 0 seeds how the rest is cut into pieces, byte 1 picks the head and body caps,
// the rest is what a client sends. Beyond the sanitizers, it checks that
//  - the pieces' sizes change nothing: fed whole, the same request gives the same answer;
//  - a refusal is one of the statuses the gate answers, with a reason;
//  - a forwarded request is clean (CRLF only, one Content-Length matching its body, within
//    the body cap, ending its head with `Connection: close`) and is a fixed point: read
//    again, it forwards as itself.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "server/request_reader.hpp"

using brisk::server::RequestLimits;
using brisk::server::RequestReader;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "http_gate_fuzz: %s\n", what);
    std::abort();
  }
}

struct Outcome {
  RequestReader::Status status;
  int refusal;
  std::string request;
};

Outcome read_all(std::string_view in, RequestLimits limits, uint32_t seed) {
  RequestReader r(limits);
  size_t fed = 0;
  while (fed < in.size() && r.status() == RequestReader::Status::kMore) {
    size_t n = in.size() - fed;
    if (seed != 0) {  // pieces of 1 to 64 bytes, from a small LCG
      seed = seed * 1103515245u + 12345u;
      n = std::min<size_t>(n, 1 + (seed >> 16) % 64);
    }
    r.feed(in.substr(fed, n));
    fed += n;
  }
  check(r.received() == fed, "received() is not the bytes fed");
  Outcome o{r.status(), r.refusal(), {}};
  if (o.status == RequestReader::Status::kRefused) {
    static const std::set<int> kStatuses = {400, 411, 413, 414, 415, 431, 501, 505};
    check(kStatuses.count(o.refusal) == 1, "an unexpected refusal status");
    check(!r.why().empty(), "a refusal without a reason");
  }
  if (o.status == RequestReader::Status::kDone) o.request = r.take_request();
  return o;
}

void check_forwarded(const std::string& req, RequestLimits limits) {
  const size_t head_end = req.find("\r\n\r\n");
  check(head_end != std::string::npos, "no end of head");
  const std::string_view head = std::string_view(req).substr(0, head_end + 2);
  for (size_t i = 0; i < head.size(); ++i) {
    check(head[i] != '\0', "a NUL in the forwarded head");
    check((head[i] != '\n' || (i > 0 && head[i - 1] == '\r')) && (head[i] != '\r' || head[i + 1] == '\n'),
          "a bare CR or LF in the forwarded head");
  }
  check(head.size() >= 19 && head.substr(head.size() - 19) == "Connection: close\r\n", "no Connection: close last");
  const size_t body = req.size() - head_end - 4;
  check(body <= limits.max_body_bytes, "a body over the cap");
  const size_t cl = head.find("\r\nContent-Length: ");
  if (cl == std::string_view::npos) {
    check(body == 0, "a body without a Content-Length");
  } else {
    check(head.find("\r\nContent-Length: ", cl + 1) == std::string_view::npos, "two Content-Lengths");
    check(std::strtoull(head.data() + cl + 18, nullptr, 10) == body, "Content-Length is not the body's length");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t seed = data[0] | 1u;
  RequestLimits limits;
  limits.max_head_bytes = 64 + size_t(data[1] & 0x0f) * 256;
  limits.max_body_bytes = size_t(data[1] >> 4) * 512;
  const std::string_view in(reinterpret_cast<const char*>(data + 2), size - 2);

  const Outcome pieces = read_all(in, limits, seed), whole = read_all(in, limits, 0);
  check(pieces.status == whole.status && pieces.refusal == whole.refusal && pieces.request == whole.request,
        "the answer depends on how the bytes were cut");
  if (whole.status != RequestReader::Status::kDone) return 0;
  check_forwarded(whole.request, limits);
  // Forwarded again, it must come out as itself (the rewritten head may be a little longer).
  RequestLimits again = limits;
  again.max_head_bytes = 2 * limits.max_head_bytes + 64;
  const Outcome twice = read_all(whole.request, again, 0);
  check(twice.status == RequestReader::Status::kDone && twice.request == whole.request,
        "a forwarded request does not forward as itself");
  return 0;
}
