// ByteCursor: the only way the binary parsers read a mapped file. Every read checks the
// remaining length first (no pointer arithmetic past the end), and every failure names the
// file, the byte offset and what was being read, so a truncated download reads as such.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "base/error.hpp"

namespace brisk {

class ByteCursor {
 public:
  ByteCursor(const uint8_t* data, uint64_t size, std::string path)
      : data_(data), size_(size), path_(std::move(path)) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t remaining() const { return size_ - pos_; }
  const std::string& path() const { return path_; }

  // Throws kFormat unless `n` more bytes are available.
  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      throw Error(ErrorCode::kFormat,
                  std::string("truncated file: ") + what + " needs " + std::to_string(n) +
                      " bytes but only " + std::to_string(remaining()) + " remain",
                  at_offset(path_, pos_));
  }

  // Little-endian scalar (the hosts brisk runs on are little-endian, as GGUF files are).
  template <typename T>
  T read(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // A u64-length-prefixed string, capped before anything is allocated.
  std::string read_string(uint64_t cap, const char* what) {
    uint64_t at = pos_;
    uint64_t n = read<uint64_t>(what);
    if (n > cap)
      throw Error(ErrorCode::kLimit,
                  std::string(what) + " length " + std::to_string(n) + " exceeds the cap of " +
                      std::to_string(cap) + " bytes",
                  at_offset(path_, at));
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += n;
    return s;
  }

  void skip(uint64_t n, const char* what) {
    need(n, what);
    pos_ += n;
  }

  Error error(ErrorCode code, const std::string& message, uint64_t at) const {
    return Error(code, message, at_offset(path_, at));
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string path_;
};

}  // namespace brisk
