#include "template/jinja_ints.hpp"

#include <cmath>

namespace brisk::jinja {
namespace {

constexpr Int128 kMin = INT64_MIN;
constexpr Int128 kMax = Int128(UINT64_MAX);

[[noreturn]] void fail(const Budget* budget, ErrorCode code, const std::string& what) {
  if (budget) budget->fail(code, what);
  throw Error(code, "chat template: " + what, "chat_template");
}

[[noreturn]] void overflow(const char* op, const Budget* budget) {
  fail(budget, ErrorCode::kLimit,
       std::string("integer overflow in '") + op + "': the result is outside the integers a template may use (" +
           int_to_string(kMin) + " to " + int_to_string(kMax) + ")");
}

Value power(Int128 x, Int128 y, const Budget* budget) {
  if (y < 0) {
    if (x == 0) fail(budget, ErrorCode::kInvalidArgument, "0 cannot be raised to a negative power");
    return Value::number(std::pow(double(x), double(y)));
  }
  if (x == 0 || x == 1) return make_int(y == 0 ? 1 : x, "**", budget);
  if (x == -1) return make_int(y % 2 ? -1 : 1, "**", budget);
  // |x| >= 2: 2**65 already leaves the range, so a few checked products decide.
  if (y > 64) overflow("**", budget);
  Int128 result = 1;
  for (Int128 k = 0; k < y; ++k)
    if (__builtin_mul_overflow(result, x, &result) || result < kMin || result > kMax) overflow("**", budget);
  return make_int(result, "**", budget);
}

}  // namespace

Int128 int_value(const Value& v) {
  if (v.kind == Value::Kind::Bool) return v.b;
  if (v.kind != Value::Kind::Int) return 0;
  return v.u ? Int128(uint64_t(v.i)) : Int128(v.i);
}

Value make_int(Int128 x, const char* op, const Budget* budget) {
  if (x < kMin || x > kMax) overflow(op, budget);
  Value v = Value::integer(int64_t(uint64_t(x)));
  v.u = x > INT64_MAX;
  return v;
}

int64_t clamp_int64(Int128 x) { return x > INT64_MAX ? INT64_MAX : x < INT64_MIN ? INT64_MIN : int64_t(x); }

std::string int_to_string(Int128 x) {
  if (x == 0) return "0";
  const bool neg = x < 0;
  std::string digits;
  for (; x != 0; x /= 10) digits += char('0' + int(neg ? -(x % 10) : x % 10));
  if (neg) digits += '-';
  return {digits.rbegin(), digits.rend()};
}

bool parse_digits(std::string_view digits, Int128* out) {
  if (digits.empty()) return false;
  uint64_t x = 0;
  bool too_big = false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    too_big |= __builtin_mul_overflow(x, uint64_t(10), &x) || __builtin_add_overflow(x, uint64_t(c - '0'), &x);
  }
  *out = too_big ? kMax + 1 : Int128(x);
  return true;
}

Int128 float_to_int(double f, const char* op, const Budget* budget) {
  if (std::isnan(f)) fail(budget, ErrorCode::kInvalidArgument, std::string("'") + op + "': cannot convert NaN to an integer");
  if (std::isinf(f)) fail(budget, ErrorCode::kLimit, std::string("'") + op + "': cannot convert infinity to an integer");
  const double t = std::trunc(f);
  if (t < -9223372036854775808.0 || t >= 18446744073709551616.0) overflow(op, budget);
  return t < 0 ? Int128(int64_t(t)) : Int128(uint64_t(t));
}

Value int_arith(const std::string& op, Int128 x, Int128 y, const Budget* budget) {
  Int128 r = 0;
  if (op == "+") {
    if (__builtin_add_overflow(x, y, &r)) overflow("+", budget);
    return make_int(r, "+", budget);
  }
  if (op == "-") {
    if (__builtin_sub_overflow(x, y, &r)) overflow("-", budget);
    return make_int(r, "-", budget);
  }
  if (op == "*") {
    if (__builtin_mul_overflow(x, y, &r)) overflow("*", budget);
    return make_int(r, "*", budget);
  }
  if (op == "//" || op == "%") {
    if (y == 0) fail(budget, ErrorCode::kInvalidArgument, "integer division or modulo by zero");
    Int128 d = x / y, m = x % y;  // 128 bits: INT64_MIN / -1 is an ordinary quotient here
    if (m != 0 && ((m < 0) != (y < 0))) --d, m += y;
    return make_int(op == "//" ? d : m, op.c_str(), budget);
  }
  if (op == "**") return power(x, y, budget);
  fail(budget, ErrorCode::kInvalidArgument, "unknown integer operator " + op);
}

}  // namespace brisk::jinja
