// The byte-level pre-tokenizer: a PCRE2 regex (UTF + UCP, JIT when available) that cuts text
// into words the way HF's Split(pattern, behavior=Isolated) does: matches and the gaps
// between them are all kept as pieces. Invalid UTF-8 never matches and ends up in a gap.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brisk {

class SplitRegex {
 public:
  explicit SplitRegex(const std::string& pattern);  // throws Error on a bad pattern
  ~SplitRegex();
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

}  // namespace brisk
