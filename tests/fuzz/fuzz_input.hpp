// Shared by the fuzz targets: splitting one fuzz input into several files, and the rule
// every target follows: brisk::Error is the expected answer to bad input; anything else that
// escapes (another exception, a crash, a sanitizer report) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::fuzz {

// The input cut at each "\n%%\n" into at most `parts` pieces (missing pieces are empty), so
// one input can hold a template and its messages, or a config and a tokenizer.
inline std::vector<std::string> split_parts(const uint8_t* data, size_t size, size_t parts) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> out;
  while (out.size() + 1 < parts) {
    const size_t cut = in.find("\n%%\n");
    if (cut == std::string_view::npos) break;
    out.emplace_back(in.substr(0, cut));
    in.remove_prefix(cut + 4);
  }
  out.emplace_back(in);
  out.resize(parts);
  return out;
}

}  // namespace brisk::fuzz
