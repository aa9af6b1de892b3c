// Helpers shared by the format tests: write raw bytes to a scratch file, assert that opening
// a file throws brisk::Error mentioning a phrase, and RawGguf, which builds GGUF bytes field by
// field so a test can lie in exactly one field (a count, a dim, an offset) at a time.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "format/checkpoint.hpp"
#include "format/gguf_reader.hpp"

namespace brisk::test {

inline void write_file(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), std::streamsize(n));
  ASSERT_TRUE(out.good()) << path;
}
inline void write_file(const std::string& path, const std::vector<uint8_t>& b) {
  write_file(path, b.data(), b.size());
}
inline void write_file(const std::string& path, const std::string& s) { write_file(path, s.data(), s.size()); }

inline std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Opens `path` expecting brisk::Error whose text contains `needle` (and `code`, if given).
inline void expect_open_error(const std::string& path, const std::string& needle,
                              std::optional<ErrorCode> code = std::nullopt) {
  try {
    open_checkpoint(path);
    ADD_FAILURE() << "opening " << path << " succeeded; expected an error about '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "error text: " << e.what() << "\nexpected it to mention: " << needle;
    if (code) {
      EXPECT_EQ(int(e.code()), int(*code)) << e.what();
    }
  }
}

class RawGguf {
 public:
  uint32_t magic = gguf::kMagic;
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;  // override the true counts
  uint32_t alignment = 32;                  // used for padding only
  uint64_t data_bytes = 0;                  // zero bytes appended after the padding

  struct Bytes {
    std::vector<uint8_t> b;
    template <typename T>
    Bytes& put(T v) {
      uint8_t x[sizeof(T)];
      std::memcpy(x, &v, sizeof(T));
      b.insert(b.end(), x, x + sizeof(T));
      return *this;
    }
    Bytes& str(const std::string& s) {
      put<uint64_t>(s.size());
      b.insert(b.end(), s.begin(), s.end());
      return *this;
    }
  };

  Bytes& kv(const std::string& key, MetaType type) {
    kvs_.emplace_back();
    kvs_.back().str(key).put<uint32_t>(uint32_t(type));
    return kvs_.back();  // the caller appends the value
  }
  void kv_u32(const std::string& key, uint32_t v) { kv(key, MetaType::U32).put(v); }
  void kv_string(const std::string& key, const std::string& v) { kv(key, MetaType::String).str(v); }

  // ne is GGUF order (innermost first); n_dims defaults to ne.size().
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset,
              std::optional<uint32_t> n_dims = std::nullopt) {
    Bytes t;
    t.str(name).put<uint32_t>(n_dims.value_or(uint32_t(ne.size())));
    for (uint64_t d : ne) t.put<uint64_t>(d);
    t.put<uint32_t>(type).put<uint64_t>(offset);
    infos_.push_back(std::move(t));
  }

  std::vector<uint8_t> build() const {
    Bytes o;
    o.put(magic).put(version);
    o.put<uint64_t>(n_tensors.value_or(infos_.size()));
    o.put<uint64_t>(n_kv.value_or(kvs_.size()));
    for (const auto& k : kvs_) o.b.insert(o.b.end(), k.b.begin(), k.b.end());
    for (const auto& t : infos_) o.b.insert(o.b.end(), t.b.begin(), t.b.end());
    while (o.b.size() % alignment) o.b.push_back(0);
    o.b.insert(o.b.end(), data_bytes, 0);
    return o.b;
  }

 private:
  std::vector<Bytes> kvs_;
  std::vector<Bytes> infos_;
};

}  // namespace brisk::test
