// A read-only memory map of a whole file. Parsers read only through bounds-checked views of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace brisk {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error(kIo) naming the path
  // A copy of bytes already in memory, under a name for error messages (the fuzz targets
  // feed the parsers this way).
  MappedFile(const std::string& name, const uint8_t* bytes, uint64_t size);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace brisk
