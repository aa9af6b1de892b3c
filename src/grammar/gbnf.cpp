#include "grammar/gbnf.hpp"

#include <string>

#include "base/error.hpp"
#include "grammar/utf8_ranges.hpp"

namespace brisk::grammar {
namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
 public:
  Parser(std::string_view text, GrammarBuilder& b) : t_(text), b_(b) {}

  void parse() {
    space(true);
    while (p_ < t_.size()) {
      rule();
      space(true);
    }
  }

 private:
  using Sequence = GrammarBuilder::Sequence;

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p_ && i < t_.size(); ++i) t_[i] == '\n' ? (++line, col = 1) : ++col;
    throw Error(ErrorCode::kInvalidArgument, "GBNF grammar, line " + std::to_string(line) + " column " +
                                                 std::to_string(col) + ": " + what);
  }
  bool at_end() const { return p_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[p_]; }

  // Blanks and comments; newlines only where allowed (inside groups, between rules).
  void space(bool newlines) {
    while (!at_end()) {
      const char c = t_[p_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++p_;
      } else if (c == '#') {
        while (!at_end() && t_[p_] != '\n') ++p_;
      } else {
        break;
      }
    }
  }

  std::string name() {
    const size_t start = p_;
    while (!at_end() && word_char(t_[p_])) ++p_;
    if (p_ == start) fail("expected a rule name");
    return std::string(t_.substr(start, p_ - start));
  }

  void rule() {
    const std::string n = name();
    space(false);
    if (t_.substr(p_, 3) != "::=") fail("expected ::= after '" + n + "'");
    p_ += 3;
    space(true);
    const uint32_t r = b_.rule(n);
    if (b_.defined(r)) fail("rule '" + n + "' is defined twice");
    alternatives(r, false);
    if (!at_end() && peek() != '\n') fail("unexpected '" + std::string(1, peek()) + "'");
  }

  void alternatives(uint32_t r, bool nested) {
    b_.add_alternative(r, sequence(nested));
    while (peek() == '|') {
      ++p_;
      space(true);
      b_.add_alternative(r, sequence(nested));
    }
  }

  Sequence sequence(bool nested) {
    Sequence seq;
    while (!at_end()) {
      const char c = peek();
      if (c == '|' || c == ')' || c == '\n') break;
      Sequence item = element(nested);
      space(nested);
      item = postfix(std::move(item), nested);
      seq.insert(seq.end(), item.begin(), item.end());
    }
    return seq;
  }

  Sequence element(bool nested) {
    const char c = peek();
    if (c == '"') return literal();
    if (c == '[') return {char_class()};
    if (c == '.') {
      ++p_;
      return {b_.code_points({{0, 0x10FFFF}}, false, "any")};
    }
    if (c == '(') {
      if (++depth_ > 256) fail("groups nest more than 256 deep");
      ++p_;
      space(true);
      const uint32_t r = b_.fresh_rule("group");
      alternatives(r, true);
      if (peek() != ')') fail("expected )");
      ++p_;
      --depth_;
      return {GrammarBuilder::ref(r)};
    }
    if (word_char(c)) return {GrammarBuilder::ref(b_.rule(name()))};
    fail(std::string("unexpected '") + c + "'");
  }

  Sequence postfix(Sequence item, bool nested) {
    for (;;) {
      int lo = 0, hi = -1;
      if (GrammarBuilder::quantifier(peek(), lo, hi)) {
        ++p_;
      } else if (peek() == '{') {
        ++p_;
        bounds(lo, hi);
      } else {
        return item;
      }
      if (item.empty()) fail("a repetition of nothing");
      item = {b_.repeat(item, lo, hi, "repeat")};
      space(nested);
    }
  }

  void bounds(int& lo, int& hi) {
    space(false);
    lo = number();
    space(false);
    hi = lo;
    if (peek() == ',') {
      ++p_;
      space(false);
      hi = peek() == '}' ? -1 : number();
      space(false);
    }
    if (peek() != '}') fail("expected } to close the repetition");
    ++p_;
  }

  int number() {
    const size_t start = p_;
    long v = 0;
    while (!at_end() && t_[p_] >= '0' && t_[p_] <= '9' && v <= 100000) v = v * 10 + (t_[p_++] - '0');
    if (p_ == start) fail("expected a number");
    return int(v);
  }

  // One code point of a literal or class: UTF-8 as written, or an escape.
  uint32_t code_point() {
    if (at_end()) fail("unexpected end of the grammar");
    if (peek() == '\\') return escape();
    uint32_t cp = 0;
    if (!utf8_decode(t_, p_, cp)) fail("invalid UTF-8");
    return cp;
  }


  uint32_t escape() {
    ++p_;
    if (at_end()) fail("unfinished escape");
    const char e = t_[p_++];
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case '\\': case '"': case '[': case ']': case '-': case '^': case '/': return uint32_t(e);
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default: fail(std::string("unknown escape \\") + e);
    }
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    if (!parse_hex(t_, p_, digits, v)) fail("expected a hex digit");
    if (v > 0x10FFFF) fail("code point beyond U+10FFFF");
    return v;
  }


  Sequence literal() {
    ++p_;
    Sequence seq;
    while (peek() != '"') {
      if (at_end() || peek() == '\n') fail("unterminated string");
      const uint32_t cp = code_point();
      if (cp >= 0xD800 && cp <= 0xDFFF) fail("a surrogate code point in a string");
      for (const auto& e : b_.literal(utf8_encode(cp))) seq.push_back(e);
    }
    ++p_;
    return seq;
  }

  GrammarBuilder::Element char_class() {
    ++p_;
    const bool negate = peek() == '^';
    if (negate) ++p_;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (peek() != ']') {
      if (at_end()) fail("unterminated character class");
      const uint32_t lo = code_point();
      uint32_t hi = lo;
      if (peek() == '-' && p_ + 1 < t_.size() && t_[p_ + 1] != ']') {
        ++p_;
        hi = code_point();
        if (hi < lo) fail("a character range that runs backwards");
      }
      ranges.push_back({lo, hi});
    }
    ++p_;
    if (ranges.empty() && !negate) fail("an empty character class");
    return b_.code_points(ranges, negate, "class");
  }

  std::string_view t_;
  GrammarBuilder& b_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

void parse_gbnf(std::string_view text, GrammarBuilder& b) { Parser(text, b).parse(); }

Grammar compile_gbnf(std::string_view text) {
  GrammarBuilder b;
  parse_gbnf(text, b);
  return b.build("root");
}

}  // namespace brisk::grammar
