#include "base/mapped_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.hpp"

namespace brisk {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kIo, std::string("cannot open: ") + std::strerror(errno), path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::kIo, "not a regular file", path);
  }
  size_ = uint64_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(ErrorCode::kIo, std::string("cannot map: ") + std::strerror(e), path);
    }
    data_ = static_cast<const uint8_t*>(p);
    mapped_ = true;
  }
  ::close(fd);
}

MappedFile::MappedFile(const std::string& name, const uint8_t* bytes, uint64_t size) : path_(name), size_(size) {
  if (size_ > 0) {
    auto* copy = new uint8_t[size_];  // exactly size_ bytes, so a read past the end is caught
    std::memcpy(copy, bytes, size_);
    data_ = copy;
  }
}

MappedFile::~MappedFile() {
  if (data_ && mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  else delete[] data_;
}

}  // namespace brisk
