// Integer arithmetic for the interpreter, exact or refused: operands and results are the
// integers from INT64_MIN to UINT64_MAX (what Value::Kind::Int holds), computed in 128 bits
// with overflow checks, so no template can reach undefined behaviour (INT64_MIN // -1, a
// product that wraps). A result Python would give but Value cannot hold throws
// Error(kLimit) naming the operation; division by zero throws Error(kInvalidArgument), as
// Python raises ZeroDivisionError.
#pragma once

#include <string>
#include <string_view>

#include "template/jinja_value.hpp"

namespace brisk::jinja {

using Int128 = __int128;

// The exact value of an Int or Bool (0 for other kinds).
Int128 int_value(const Value& v);
// An Int holding x; Error(kLimit) naming `op` when x is outside [INT64_MIN, UINT64_MAX].
Value make_int(Int128 x, const char* op, const Budget* budget = nullptr);
// x clamped into int64 (for indices, counts and widths, where the clamp changes nothing a
// template could observe).
int64_t clamp_int64(Int128 x);
std::string int_to_string(Int128 x);
// The value of a run of decimal digits; above UINT64_MAX it is UINT64_MAX + 1 (out of range,
// whatever the length). False when `digits` is empty or holds a non-digit.
bool parse_digits(std::string_view digits, Int128* out);
// Python's int(f) for a finite double in range; Error otherwise (NaN, infinity, too large).
Int128 float_to_int(double f, const char* op, const Budget* budget = nullptr);

// + - * // % ** on two integers (Python semantics: floor division, the remainder takes the
// divisor's sign, a negative exponent gives a float).
Value int_arith(const std::string& op, Int128 x, Int128 y, const Budget* budget = nullptr);

}  // namespace brisk::jinja
