// What the HTTP server's files share (internal to src/server): OpenAI-style error answers
// and the route table, which both the method check (405 with Allow) and the metrics'
// endpoint label read, so that no path a client makes up becomes a label.
#pragma once

#include <httplib.h>

#include <string>

namespace brisk::server {

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param = {}, const std::string& code = {});
const char* error_type(int status);

struct Route {
  const char* path;
  const char* allow;  // the methods it answers, as the Allow header lists them
  bool post;          // POST (else GET and HEAD)
};
// nullptr for a path that is not a route.
const Route* find_route(const std::string& path);
// The route's path, or "other": the metrics' endpoint label.
std::string route_label(const std::string& path);

}  // namespace brisk::server
