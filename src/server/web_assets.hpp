// The chat page brisk serve answers at / and its static files (src/server/web/, and
// Debian's marked and highlight.js where the build machine has them), embedded at build
// time by cmake/embed_files.cmake.
#pragma once

#include <cstddef>
#include <string>

namespace brisk::server {

struct WebAsset {
  const char* path;  // as requested: "/", "/static/chat.js", ...
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

extern const WebAsset kWebAssets[];  // ends with a null path

inline const WebAsset* find_web_asset(const std::string& path) {
  for (const WebAsset* a = kWebAssets; a->path; ++a)
    if (path == a->path) return a;
  return nullptr;
}

}  // namespace brisk::server
