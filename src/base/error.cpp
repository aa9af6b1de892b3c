#include "base/error.hpp"

namespace brisk {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kFormat: return "format error";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kLimit: return "limit exceeded";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

static std::string compose(ErrorCode code, const std::string& message, const std::string& where) {
  std::string s = error_code_name(code);
  s += ": ";
  s += message;
  if (!where.empty()) {
    s += " (";
    s += where;
    s += ")";
  }
  return s;
}

Error::Error(ErrorCode code, std::string message, std::string where)
    : std::runtime_error(compose(code, message, where)),
      code_(code),
      message_(std::move(message)),
      where_(std::move(where)) {}

std::string at_offset(const std::string& path, uint64_t offset) {
  return path + " at offset " + std::to_string(offset);
}

}  // namespace brisk
