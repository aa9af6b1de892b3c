// Chat template source -> jinja_ast.hpp's tree. Two steps: the source is cut into text and
// tags with Jinja2's whitespace rules as transformers configures them (`{%-`/`-%}` strip
// whitespace; trim_blocks drops the newline after a block tag; lstrip_blocks drops spaces
// and tabs between a line's start and a block tag), then each tag's tokens are parsed by
// recursive descent with Jinja2's operator precedence: or < and < not < comparisons and `in`
// < + - < ~ < * / // % < ** < unary minus < postfix (. [] ()) < filters and tests.
#include <cctype>
#include <cstdlib>

#include "base/error.hpp"
#include "template/jinja_ast.hpp"
#include "template/jinja_ints.hpp"
#include "base/utf8.hpp"

namespace brisk::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw Error(ErrorCode::kFormat, "chat template line " + std::to_string(line) + ": " + what, "chat_template");
}

// Nesting the parser accepts (brackets in an expression, blocks in blocks): recursion is
// bounded so a hostile template cannot exhaust the stack.
constexpr int kMaxNesting = 100;

// Counts one level of nesting for as long as it lives.
class NestingGuard {
 public:
  NestingGuard(int& depth, int line) : depth_(depth) {
    if (++depth_ > kMaxNesting)
      throw Error(ErrorCode::kLimit, "chat template line " + std::to_string(line) + ": nested more than " +
                                         std::to_string(kMaxNesting) + " deep", "chat_template");
  }
  ~NestingGuard() { --depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& depth_;
};

struct Segment {
  enum class Kind { Text, Output, Statement } kind;
  std::string text;
  int line;
};

int line_at(const std::string& s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

// The end of a tag's content (the index of its closing delimiter), skipping string literals.
size_t tag_end(const std::string& src, size_t from, const char* close, int line) {
  char quote = 0;
  for (size_t i = from; i + 1 < src.size(); ++i) {
    const char c = src[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == close[0] && src[i + 1] == close[1]) return i;
  }
  fail(line, std::string("a tag is not closed with ") + close);
}

std::vector<Segment> split(const std::string& src) {
  std::vector<Segment> out;
  size_t pos = 0;
  while (pos <= src.size()) {
    size_t start = src.find('{', pos);
    while (start != std::string::npos && start + 1 < src.size() && src[start + 1] != '{' && src[start + 1] != '%' &&
           src[start + 1] != '#')
      start = src.find('{', start + 1);
    if (start == std::string::npos || start + 1 >= src.size()) {
      if (pos < src.size()) out.push_back({Segment::Kind::Text, src.substr(pos), line_at(src, pos)});
      break;
    }
    const char type = src[start + 1];
    const bool block = type == '%' || type == '#';
    std::string text = src.substr(pos, start - pos);
    // `{%+` and `{#+` keep the spaces before the tag (lstrip_blocks off); `{{+` is no modifier.
    const char mod = start + 2 < src.size() && (block || src[start + 2] == '-') ? src[start + 2] : 0;
    if (mod == '-') {
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    } else if (block && mod != '+') {  // lstrip_blocks
      const size_t nl = text.rfind('\n');
      const size_t from = nl == std::string::npos ? 0 : nl + 1;
      const bool line_start = nl != std::string::npos || pos == 0 || src[pos - 1] == '\n';
      if (line_start && text.find_first_not_of(" \t", from) == std::string::npos) text.resize(from);
    }
    if (!text.empty()) out.push_back({Segment::Kind::Text, text, line_at(src, pos)});
    const int line = line_at(src, start);
    const char* close = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    const size_t content = start + 2 + (mod == '-' || mod == '+' ? 1 : 0);
    const size_t end = type == '#' ? src.find("#}", content) : tag_end(src, content, close, line);
    if (end == std::string::npos) fail(line, "a comment is not closed with #}");
    std::string body = src.substr(content, end - content);
    const bool strip_after = !body.empty() && body.back() == '-';
    const bool keep_newline = block && !body.empty() && body.back() == '+';  // `+%}`: no trim_blocks
    if (strip_after || keep_newline) body.pop_back();
    if (type != '#') out.push_back({type == '{' ? Segment::Kind::Output : Segment::Kind::Statement, body, line});
    pos = end + 2;
    if (strip_after) {
      while (pos < src.size() && std::isspace(static_cast<unsigned char>(src[pos]))) ++pos;
    } else if (block && !keep_newline) {  // trim_blocks
      if (pos < src.size() && src[pos] == '\n') ++pos;
      else if (pos + 1 < src.size() && src[pos] == '\r' && src[pos + 1] == '\n') pos += 2;
    }
  }
  return out;
}

struct Token {
  enum class Kind { Name, Int, Float, String, Op, End } kind;
  std::string text;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One escape of a string literal, s[j] being the character after the backslash: Python's
// unicode-escape codec, which Jinja2's lexer applies to every literal (\n \t \x41 \u00e9
// \U0001F600 \101 ...; an unknown escape stays as written). Returns the index after it.
size_t unescape(const std::string& s, size_t j, std::string& out, int line) {
  const char e = s[j];
  static const std::string simple = "\\'\"abfnrtv", value = "\\'\"\a\b\f\n\r\t\v";
  if (const size_t k = simple.find(e); k != std::string::npos) {
    out += value[k];
    return j + 1;
  }
  if (e == '\n') return j + 1;  // a backslash-newline continues the line
  if (e >= '0' && e <= '7') {
    uint32_t cp = 0;
    size_t k = j;
    for (; k < s.size() && k < j + 3 && s[k] >= '0' && s[k] <= '7'; ++k) cp = cp * 8 + uint32_t(s[k] - '0');
    utf8::append(out, cp);
    return k;
  }
  const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
  if (e == 'N') fail(line, "\\N{...} escapes are not supported");
  if (digits == 0) {
    out += '\\';
    out += e;
    return j + 1;
  }
  uint32_t cp = 0;
  for (size_t k = 1; k <= digits; ++k) {
    const int d = j + k < s.size() ? hex_digit(s[j + k]) : -1;
    if (d < 0) fail(line, std::string("a truncated \\") + e + " escape");
    cp = cp * 16 + uint32_t(d);
  }
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail(line, "an escape outside Unicode's characters");
  utf8::append(out, cp);
  return j + 1 + digits;
}

std::vector<Token> tokenize(const std::string& s, int line) {
  std::vector<Token> out;
  size_t i = 0;
  static const char* const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                    "=",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|"};
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::Name, s.substr(i, j - i)});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          j = k;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
      }
      std::string num;
      for (size_t k = i; k < j; ++k)
        if (s[k] != '_') num += s[k];
      out.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, num});
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string str;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          str += s[j];
          continue;
        }
        j = unescape(s, j + 1, str, line) - 1;
      }
      if (j >= s.size()) fail(line, "a string literal is not closed");
      out.push_back({Token::Kind::String, str});
      i = j + 1;
      continue;
    }
    bool matched = false;
    for (const char* op : ops) {
      const size_t n = std::char_traits<char>::length(op);
      if (s.compare(i, n, op) == 0) {
        out.push_back({Token::Kind::Op, op});
        i += n;
        matched = true;
        break;
      }
    }
    if (!matched) fail(line, std::string("unexpected character '") + c + "'");
  }
  out.push_back({Token::Kind::End, ""});
  return out;
}

// One tag's expression parser.
class ExprParser {
 public:
  ExprParser(std::vector<Token> toks, int line) : t_(std::move(toks)), line_(line) {}

  const Token& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::Kind::End; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).kind == Token::Kind::Op && peek(k).text == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).kind == Token::Kind::Name && peek(k).text == n; }
  Token next() { return t_[std::min(p_++, t_.size() - 1)]; }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(line_, std::string("expected '") + op + "' but found '" + peek().text + "'");
    ++p_;
  }
  std::string expect_name() {
    if (peek().kind != Token::Kind::Name) fail(line_, "expected a name but found '" + peek().text + "'");
    return next().text;
  }
  void expect_end() {
    if (!at_end()) fail(line_, "unexpected '" + peek().text + "'");
  }

  ExprPtr expression() {
    NestingGuard guard(depth_, line_);
    ExprPtr e = or_expr();
    if (is_name("if")) {
      ++p_;
      auto c = make(Expr::Kind::Cond);
      ExprPtr cond = or_expr();
      ExprPtr other;
      if (is_name("else")) {
        ++p_;
        other = expression();
      }
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(other));
      return c;
    }
    return e;
  }

  // An expression without a trailing `if ... else ...` (a for loop's iterable, whose `if`
  // filters the loop).
  ExprPtr expression_no_cond() { return or_expr(); }

  ExprPtr make(Expr::Kind k) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line_;
    return e;
  }

 private:
  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b) {
    auto e = make(Expr::Kind::Binary);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) ++p_, e = binary("or", std::move(e), and_expr());
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) ++p_, e = binary("and", std::move(e), not_expr());
    return e;
  }
  ExprPtr not_expr() {
    if (is_name("not")) {
      ++p_;
      NestingGuard guard(depth_, line_);
      auto e = make(Expr::Kind::Unary);
      e->name = "not";
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = math1();
    for (;;) {
      if (peek().kind == Token::Kind::Op &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
           peek().text == "<=" || peek().text == ">=")) {
        const std::string op = next().text;
        e = binary(op, std::move(e), math1());
      } else if (is_name("in")) {
        ++p_;
        e = binary("in", std::move(e), math1());
      } else if (is_name("not") && is_name("in", 1)) {
        p_ += 2;
        e = binary("not in", std::move(e), math1());
      } else {
        return e;
      }
    }
  }
  ExprPtr math1() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = next().text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = math2();
    while (is_op("~")) ++p_, e = binary("~", std::move(e), math2());
    return e;
  }
  ExprPtr math2() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = next().text;
      e = binary(op, std::move(e), power());
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary(true);
    while (is_op("**")) ++p_, e = binary("**", std::move(e), unary(true));
    return e;
  }
  ExprPtr unary(bool with_filter) {
    NestingGuard guard(depth_, line_);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = make(Expr::Kind::Unary);
      e->name = next().text;
      e->args.push_back(unary(false));
    } else {
      e = postfix(primary());
    }
    return with_filter ? filters(std::move(e)) : std::move(e);
  }

  void call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == Token::Kind::Name && is_op("=", 1)) {
        std::string key = next().text;
        ++p_;
        e.kwargs.emplace_back(std::move(key), expression());
      } else {
        e.args.push_back(expression());
      }
      if (!is_op(")")) expect_op(",");
    }
    ++p_;
  }

  // After '(': a parenthesised expression or a tuple.
  ExprPtr parenthesized() {
    auto tuple = make(Expr::Kind::List);
    tuple->name = "tuple";
    if (is_op(")")) {  // the empty tuple
      ++p_;
      return tuple;
    }
    ExprPtr inner = expression();
    if (!is_op(",")) {
      expect_op(")");
      return inner;
    }
    tuple->args.push_back(std::move(inner));
    while (is_op(",")) {
      ++p_;
      if (is_op(")")) break;
      tuple->args.push_back(expression());
    }
    expect_op(")");
    return tuple;
  }

  ExprPtr primary() {
    const Token tok = next();
    switch (tok.kind) {
      case Token::Kind::Int: {
        auto e = make(Expr::Kind::Literal);
        Int128 x = 0;
        parse_digits(tok.text, &x);
        if (x > Int128(UINT64_MAX))
          throw Error(ErrorCode::kLimit, "chat template line " + std::to_string(line_) + ": the integer " + tok.text +
                                             " is larger than " + std::to_string(UINT64_MAX), "chat_template");
        e->value = make_int(x, "literal");
        return e;
      }
      case Token::Kind::Float: {
        auto e = make(Expr::Kind::Literal);
        e->value = Value::number(std::strtod(tok.text.c_str(), nullptr));
        return e;
      }
      case Token::Kind::String: {
        auto e = make(Expr::Kind::Literal);
        std::string s = tok.text;
        while (peek().kind == Token::Kind::String) s += next().text;  // adjacent literals join
        e->value = Value::string(std::move(s));
        return e;
      }
      case Token::Kind::Name: {
        auto e = make(Expr::Kind::Literal);
        if (tok.text == "true" || tok.text == "True") e->value = Value::boolean(true);
        else if (tok.text == "false" || tok.text == "False") e->value = Value::boolean(false);
        else if (tok.text == "none" || tok.text == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::Name;
          e->name = tok.text;
        }
        return e;
      }
      case Token::Kind::Op: {
        if (tok.text == "(") return parenthesized();
        if (tok.text == "[") {
          auto e = make(Expr::Kind::List);
          while (!is_op("]")) {
            e->args.push_back(expression());
            if (!is_op("]")) expect_op(",");
          }
          ++p_;
          return e;
        }
        if (tok.text == "{") {
          auto e = make(Expr::Kind::Dict);
          while (!is_op("}")) {
            e->args.push_back(expression());
            expect_op(":");
            e->args.push_back(expression());
            if (!is_op("}")) expect_op(",");
          }
          ++p_;
          return e;
        }
        break;
      }
      case Token::Kind::End: fail(line_, "an expression ends too early");
    }
    fail(line_, "unexpected '" + tok.text + "'");
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".")) {
        ++p_;
        auto a = make(Expr::Kind::Attr);
        a->name = peek().kind == Token::Kind::Int ? next().text : expect_name();
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (is_op("[")) {
        ++p_;
        ExprPtr parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!is_op(":") && !is_op("]")) parts[k] = expression();
          if (k < 2 && is_op(":")) {
            ++p_;
            slice = true;
          } else {
            break;
          }
        }
        expect_op("]");
        auto ix = make(slice ? Expr::Kind::Slice : Expr::Kind::Index);
        ix->args.push_back(std::move(e));
        if (slice) {
          for (auto& part : parts) ix->args.push_back(std::move(part));
        } else {
          if (!parts[0]) fail(line_, "an empty subscript");
          ix->args.push_back(std::move(parts[0]));
        }
        e = std::move(ix);
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::Call);
        c->args.push_back(std::move(e));
        call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr filters(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        ++p_;
        auto f = make(Expr::Kind::Filter);
        f->name = expect_name();
        f->args.push_back(std::move(e));
        if (is_op("(")) call_args(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        ++p_;
        auto t = make(Expr::Kind::Test);
        if (is_name("not")) ++p_, t->negated = true;
        t->name = expect_name();
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          call_args(*t);
        } else if (peek().kind == Token::Kind::Int || peek().kind == Token::Kind::Float ||
                   peek().kind == Token::Kind::String || is_op("[") || is_op("{") ||
                   (peek().kind == Token::Kind::Name && !is_name("and") && !is_name("or") && !is_name("if") &&
                    !is_name("else") && !is_name("is") && !is_name("in") && !is_name("not"))) {
          t->args.push_back(postfix(primary()));  // `is divisibleby 3`, `is sameas none`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  int line_;
  int depth_ = 0;
};

// The statement structure over the segments.
class StatementParser {
 public:
  explicit StatementParser(std::vector<Segment> segs) : s_(std::move(segs)) {}

  Body parse_all() {
    std::string end;
    Body b = body({}, &end);
    return b;
  }

 private:
  // Parses until a statement whose first word is in `ends` (returned in *end; its parser
  // positioned after that word), or the end of input when `ends` is empty.
  Body body(const std::vector<std::string>& ends, std::string* end, ExprParser** end_parser = nullptr) {
    Body out;
    while (i_ < s_.size()) {
      const Segment& seg = s_[i_++];
      if (seg.kind == Segment::Kind::Text) {
        auto n = node(Node::Kind::Text, seg.line);
        n->text = seg.text;
        out.push_back(std::move(n));
        continue;
      }
      parsers_.push_back(std::make_unique<ExprParser>(tokenize(seg.text, seg.line), seg.line));
      ExprParser& p = *parsers_.back();
      if (seg.kind == Segment::Kind::Output) {
        auto n = node(Node::Kind::Output, seg.line);
        n->expr = p.expression();
        p.expect_end();
        out.push_back(std::move(n));
        continue;
      }
      const std::string word = p.expect_name();
      for (const auto& e : ends)
        if (word == e) {
          *end = word;
          if (end_parser) *end_parser = &p;
          return out;
        }
      out.push_back(statement(word, p, seg.line));
    }
    if (!ends.empty()) fail(s_.empty() ? 1 : s_.back().line, "missing {% " + ends.back() + " %}");
    return out;
  }

  NodePtr node(Node::Kind k, int line) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = line;
    return n;
  }

  // `(a, b=default, ...)` of a macro or a call block's caller.
  void params(ExprParser& p, Node& n) {
    p.expect_op("(");
    while (!p.is_op(")")) {
      std::string param = p.expect_name();
      ExprPtr def;
      if (p.is_op("=")) {
        p.next();
        def = p.expression();
      }
      n.params.emplace_back(std::move(param), std::move(def));
      if (!p.is_op(")")) p.expect_op(",");
    }
    p.next();
  }

  Body body_until(const char* end_word) {
    std::string end;
    ExprParser* ep = nullptr;
    Body b = body({end_word}, &end, &ep);
    ep->expect_end();
    return b;
  }

  NodePtr if_statement(ExprParser& p, int line) {
    auto n = node(Node::Kind::If, line);
    ExprPtr cond = p.expression();
    p.expect_end();
    for (;;) {
      std::string end;
      ExprParser* ep = nullptr;
      Body b = body({"elif", "else", "endif"}, &end, &ep);
      n->branches.emplace_back(std::move(cond), std::move(b));
      if (end == "elif") {
        cond = ep->expression();
        ep->expect_end();
        continue;
      }
      if (end == "else") {
        ep->expect_end();
        n->else_body = body({"endif"}, &end, &ep);
      }
      ep->expect_end();
      return n;
    }
  }

  NodePtr for_statement(ExprParser& p, int line) {
    auto n = node(Node::Kind::For, line);
    n->targets.push_back(p.expect_name());
    while (p.is_op(",")) {
      p.next();
      n->targets.push_back(p.expect_name());
    }
    if (!p.is_name("in")) fail(line, "expected 'in' in a for loop");
    p.next();
    n->expr = p.expression_no_cond();
    if (p.is_name("if")) {
      p.next();
      n->filter = p.expression_no_cond();
    }
    if (p.is_name("recursive")) fail(line, "recursive loops are not supported");
    p.expect_end();
    std::string end;
    ExprParser* ep = nullptr;
    n->body = body({"else", "endfor"}, &end, &ep);
    if (end == "else") {
      ep->expect_end();
      n->else_body = body({"endfor"}, &end, &ep);
    }
    ep->expect_end();
    return n;
  }

  NodePtr set_statement(ExprParser& p, int line) {
    std::string name = p.expect_name(), attr;
    if (p.is_op(".")) {
      p.next();
      attr = p.expect_name();
    }
    if (p.at_end()) {  // {% set x %}...{% endset %}
      if (!attr.empty()) fail(line, "a set block assigns a plain name");
      auto n = node(Node::Kind::SetBlock, line);
      n->text = name;
      std::string end;
      ExprParser* ep = nullptr;
      n->body = body({"endset"}, &end, &ep);
      ep->expect_end();
      return n;
    }
    if (p.is_op(",")) fail(line, "assigning to several names at once is not supported");
    p.expect_op("=");
    auto n = node(Node::Kind::Set, line);
    n->text = name;
    n->attr = attr;
    n->expr = p.expression();
    p.expect_end();
    return n;
  }

  NodePtr statement(const std::string& word, ExprParser& p, int line) {
    NestingGuard guard(depth_, line);
    if (word == "if") return if_statement(p, line);
    if (word == "for") return for_statement(p, line);
    if (word == "set") return set_statement(p, line);
    if (word == "macro") {
      auto n = node(Node::Kind::Macro, line);
      n->text = p.expect_name();
      params(p, *n);
      p.expect_end();
      n->body = body_until("endmacro");
      return n;
    }
    if (word == "call") {  // {% call(args) macro(...) %}body{% endcall %}: the body is the macro's caller()
      auto n = node(Node::Kind::CallBlock, line);
      if (p.is_op("(")) params(p, *n);
      n->expr = p.expression();
      if (n->expr->kind != Expr::Kind::Call) fail(line, "{% call %} needs a macro call");
      p.expect_end();
      n->body = body_until("endcall");
      return n;
    }
    if (word == "break" || word == "continue") {
      p.expect_end();
      return node(word == "break" ? Node::Kind::Break : Node::Kind::Continue, line);
    }
    if (word == "generation") {  // transformers' assistant-mask marker: its body renders as is
      p.expect_end();
      auto n = node(Node::Kind::If, line);
      auto always = p.make(Expr::Kind::Literal);
      always->value = Value::boolean(true);
      std::string end;
      ExprParser* ep = nullptr;
      n->branches.emplace_back(std::move(always), body({"endgeneration"}, &end, &ep));
      return n;
    }
    fail(line, "unknown or unexpected statement '" + word + "'");
  }

  std::vector<Segment> s_;
  size_t i_ = 0;
  int depth_ = 0;
  std::vector<std::unique_ptr<ExprParser>> parsers_;
};

}  // namespace

std::shared_ptr<Program> parse_template(const std::string& source) {
  auto prog = std::make_shared<Program>();
  // Jinja2 drops one newline at the very end of a template (keep_trailing_newline=False).
  std::string src = source;
  if (src.size() >= 2 && src.compare(src.size() - 2, 2, "\r\n") == 0) src.resize(src.size() - 2);
  else if (!src.empty() && src.back() == '\n') src.pop_back();
  prog->body = StatementParser(split(src)).parse_all();
  return prog;
}

}  // namespace brisk::jinja
