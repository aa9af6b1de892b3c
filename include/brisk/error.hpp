// brisk::Error: the one exception type the engine throws on bad input or a failed resource.
// It carries a code a caller can branch on, a message a person can act on, and where the
// problem is (a file and byte offset, a tensor name, a request field), so nothing has to
// parse the message text.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace brisk {

enum class ErrorCode {
  kInvalidArgument,   // a caller passed something unusable (empty prompt, bad option)
  kIo,                // open/read/map failed
  kFormat,            // a file is malformed: truncated, bad magic, inconsistent sizes
  kUnsupported,       // well-formed but not something brisk handles (dtype, architecture)
  kLimit,             // a resource cap was hit (string length, tensor count, context length)
  kInternal,          // a broken invariant inside brisk
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message, std::string where = {});

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& where() const { return where_; }

 private:
  ErrorCode code_;
  std::string message_;
  std::string where_;
};

// "path at offset N" for parsers.
std::string at_offset(const std::string& path, uint64_t offset);

}  // namespace brisk
