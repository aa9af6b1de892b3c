// PCRE2 wrapper for the pre-tokenizer regexes. PCRE2_MATCH_INVALID_UTF lets hostile input
// (invalid UTF-8) through without a UTF check error; such bytes simply never match. JIT
// matching gets a thread-local stack large enough for long runs of letters or spaces.

#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.hpp"

#include <pcre2.h>

#include <memory>

#include "base/error.hpp"

namespace brisk {
namespace {

struct JitStack {
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* ctx = nullptr;
  JitStack() {
    stack = pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr);
    ctx = pcre2_match_context_create(nullptr);
    if (stack && ctx) pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~JitStack() {
    if (ctx) pcre2_match_context_free(ctx);
    if (stack) pcre2_jit_stack_free(stack);
  }
};

pcre2_match_context* thread_match_context() {
  thread_local JitStack js;
  return js.ctx;
}

}  // namespace

SplitRegex::SplitRegex(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(ErrorCode::kUnsupported, "pre-tokenizer regex does not compile: " +
                                             std::string(reinterpret_cast<char*>(msg)) + " at offset " +
                                             std::to_string(off) + " in " + pattern);
  }
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

SplitRegex::~SplitRegex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void SplitRegex::split(std::string_view text, std::vector<std::string_view>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  pcre2_match_context* ctx = jit_ ? thread_match_context() : nullptr;
  size_t pos = 0, gap = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(code, subject, text.size(), pos, 0, md.get(), ctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(ErrorCode::kInternal, "pre-tokenizer match failed: " + std::string(reinterpret_cast<char*>(msg)));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    size_t s = ov[0], e = ov[1];
    if (e == s) {  // empty match: step over one byte (never happens with the known patterns)
      pos = s + 1;
      continue;
    }
    if (s > gap) out.push_back(text.substr(gap, s - gap));
    out.push_back(text.substr(s, e - s));
    pos = gap = e;
  }
  if (gap < text.size()) out.push_back(text.substr(gap));
}

}  // namespace brisk
