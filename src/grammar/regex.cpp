#include "grammar/regex.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "grammar/utf8_ranges.hpp"

namespace brisk::grammar {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;
using Sequence = GrammarBuilder::Sequence;

Ranges one(uint32_t cp) { return {{cp, cp}}; }

Ranges intersect(const Ranges& a, const Ranges& b) {  // both normalized
  Ranges out;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const uint32_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo <= hi) out.push_back({lo, hi});
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return out;
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x2028, 0x2029}, {0xFEFF, 0xFEFF}};

class RegexParser {
 public:
  RegexParser(std::string_view t, GrammarBuilder& b, RegexOutput out) : t_(t), b_(b), out_(out) {}

  uint32_t parse() {
    if (peek() == '^') ++p_;
    const uint32_t r = b_.fresh_rule("regex");
    alternation(r);
    if (!at_end()) fail(peek() == ')' ? "unbalanced )" : "unexpected character");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument, "regex, at offset " + std::to_string(p_) + ": " + what);
  }
  bool at_end() const { return p_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[p_]; }

  void alternation(uint32_t r) {
    b_.add_alternative(r, sequence());
    while (peek() == '|') {
      ++p_;
      b_.add_alternative(r, sequence());
    }
  }

  Sequence sequence() {
    Sequence seq;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && p_ + 1 == t_.size()) {  // the end anchor: the match is anchored anyway
        ++p_;
        break;
      }
      Sequence atom_seq = atom();
      atom_seq = quantified(std::move(atom_seq));
      seq.insert(seq.end(), atom_seq.begin(), atom_seq.end());
    }
    return seq;
  }

  Sequence quantified(Sequence atom_seq) {
    for (;;) {
      int lo = 0, hi = -1;
      if (GrammarBuilder::quantifier(peek(), lo, hi))
        ++p_;
      else if (peek() != '{' || !bounds(lo, hi))
        return atom_seq;
      if (peek() == '?' || peek() == '+') ++p_;  // lazy / possessive: the same language
      atom_seq = {b_.repeat(atom_seq, lo, hi, "regex-repeat")};
    }
  }

  // {m}, {m,}, {m,n}; false (nothing consumed) when the brace is a literal.
  bool bounds(int& lo, int& hi) {
    size_t q = p_ + 1;
    auto number = [&](int& v) {
      const size_t start = q;
      long x = 0;
      while (q < t_.size() && t_[q] >= '0' && t_[q] <= '9' && x < 100000) x = x * 10 + (t_[q++] - '0');
      v = int(x);
      return q > start;
    };
    if (!number(lo)) return false;
    hi = lo;
    if (q < t_.size() && t_[q] == ',') {
      ++q;
      if (!number(hi)) hi = -1;
    }
    if (q >= t_.size() || t_[q] != '}') return false;
    p_ = q + 1;
    return true;
  }

  Sequence atom() {
    const char c = peek();
    if (c == '(') return group();
    if (c == '[') {
      bool negate = false;
      Ranges r = class_ranges(negate);
      return {chars(r, negate)};
    }
    if (c == '.') {
      ++p_;
      return {chars({{'\n', '\n'}, {'\r', '\r'}}, true)};
    }
    if (c == '*' || c == '+' || c == '?') fail("a quantifier with nothing to repeat");
    if (c == '^') fail("^ inside the pattern");
    if (c == '\\') {
      bool negate = false;
      Ranges r = escape(negate, false);
      return {chars(r, negate)};
    }
    return {chars(one(code_point()), false)};
  }

  Sequence group() {
    if (++depth_ > 256) fail("groups nest more than 256 deep");
    ++p_;
    if (peek() == '?') {
      ++p_;
      if (peek() == ':') {
        ++p_;
      } else if (peek() == '<' && p_ + 1 < t_.size() && t_[p_ + 1] != '=' && t_[p_ + 1] != '!') {
        while (!at_end() && peek() != '>') ++p_;  // a named group: the name is irrelevant
        ++p_;
      } else {
        fail("lookaround assertions are not supported");
      }
    }
    const uint32_t r = b_.fresh_rule("regex-group");
    alternation(r);
    if (peek() != ')') fail("missing )");
    ++p_;
    --depth_;
    return {GrammarBuilder::ref(r)};
  }

  Ranges class_ranges(bool& negate_class) {
    ++p_;
    negate_class = peek() == '^';
    if (negate_class) ++p_;
    Ranges ranges;
    bool first = true;
    while (at_end() || peek() != ']' || first) {
      if (at_end()) fail("unterminated character class");
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        bool negate = false;
        Ranges r = escape(negate, true);
        if (negate) fail("\\D, \\W or \\S inside a class");
        if (r.size() != 1 || r[0].first != r[0].second) {
          ranges.insert(ranges.end(), r.begin(), r.end());
          continue;
        }
        lo = r[0].first;
      } else {
        lo = code_point();
      }
      uint32_t hi = lo;
      if (peek() == '-' && p_ + 1 < t_.size() && t_[p_ + 1] != ']') {
        ++p_;
        if (peek() == '\\') {
          bool negate = false;
          Ranges r = escape(negate, true);
          if (r.size() != 1 || r[0].first != r[0].second) fail("a class escape as a range end");
          hi = r[0].first;
        } else {
          hi = code_point();
        }
        if (hi < lo) fail("a character range that runs backwards");
      }
      ranges.push_back({lo, hi});
    }
    ++p_;
    return ranges;
  }

  Ranges escape(bool& negate, bool in_class) {
    ++p_;
    if (at_end()) fail("a pattern ending in \\");
    const char e = t_[p_++];
    switch (e) {
      case 'd': return kDigit;
      case 'w': return kWord;
      case 's': return kSpace;
      case 'D': negate = true; return kDigit;
      case 'W': negate = true; return kWord;
      case 'S': negate = true; return kSpace;
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 't': return one('\t');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case '0': return one(0);
      case 'x': return one(hex(2));
      case 'u': return one(hex(4));
      case 'b':
        if (in_class) return one('\b');
        fail("word boundaries (\\b) are not supported");
      case 'B': fail("word boundaries (\\B) are not supported");
      default:
        if (e >= '1' && e <= '9') fail("backreferences are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) fail(std::string("unknown escape \\") + e);
        return one(uint32_t(static_cast<unsigned char>(e)));
    }
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    if (!parse_hex(t_, p_, digits, v)) fail("expected a hex digit");
    return v;
  }


  uint32_t code_point() {
    uint32_t cp = 0;
    if (at_end() || !utf8_decode(t_, p_, cp)) fail("invalid UTF-8");
    return cp;
  }


  // One character of the ranges (complemented when negate). In a JSON string, '"', '\' and
  // control characters are written escaped.
  GrammarBuilder::Element chars(const Ranges& ranges, bool negate) {
    if (out_ == RegexOutput::Raw) return b_.code_points(ranges, negate, "regex-char");
    const Ranges all = normalize_ranges(ranges, negate);
    const Ranges special = normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, false);
    const Ranges plain = intersect(all, normalize_ranges(special, true));
    const uint32_t r = b_.fresh_rule("regex-char");
    if (!plain.empty()) b_.add_alternative(r, {b_.code_points(plain, false, "regex-char")});
    for (auto [lo, hi] : intersect(all, special))
      for (uint32_t cp = lo; cp <= hi; ++cp) b_.add_alternative(r, b_.literal(json_escape(cp)));
    if (!b_.defined(r)) fail("a character class that matches nothing");
    return GrammarBuilder::ref(r);
  }

  static std::string json_escape(uint32_t cp) {
    if (cp == '"') return "\\\"";
    if (cp == '\\') return "\\\\";
    if (cp == '\n') return "\\n";
    if (cp == '\t') return "\\t";
    if (cp == '\r') return "\\r";
    static const char* kHex = "0123456789abcdef";
    return std::string("\\u00") + kHex[cp >> 4] + kHex[cp & 15];
  }

  std::string_view t_;
  GrammarBuilder& b_;
  RegexOutput out_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

uint32_t regex_rule(std::string_view pattern, GrammarBuilder& b, RegexOutput out) {
  return RegexParser(pattern, b, out).parse();
}

Grammar compile_regex(std::string_view pattern) {
  GrammarBuilder b;
  const uint32_t r = regex_rule(pattern, b);
  const uint32_t root = b.rule("root");
  b.add_alternative(root, {GrammarBuilder::ref(r)});
  return b.build("root");
}

}  // namespace brisk::grammar
