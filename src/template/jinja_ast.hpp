// The parsed form of a chat template: a tree of statements (text, output, if, for, set,
// macro, break/continue) over expressions, as Jinja2 parses the same source. jinja_parse.cpp
// builds it; jinja_eval.cpp walks it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/jinja_value.hpp"

namespace brisk::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // value
    Name,     // name
    Attr,     // args[0].name
    Index,    // args[0][args[1]]
    Slice,    // args[0][args[1]:args[2]:args[3]] (null parts omitted)
    Call,     // args[0](args[1..], kwargs)
    Filter,   // args[0] | name(args[1..], kwargs)
    Test,     // args[0] is [not] name(args[1..])
    Unary,    // op args[0]: "-", "+", "not"
    Binary,   // args[0] op args[1]: + - * / // % ** ~ == != < > <= >= in "not in" and or
    Cond,     // args[0] if args[1] else args[2] (args[2] may be null)
    List,     // [args...]; name "tuple" for (a, b)
    Dict,     // {args[0]: args[1], ...}
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;  // Name, Attr, Filter, Test; the operator of Unary and Binary
  bool negated = false;  // Test: `is not`
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, CallBlock, Break, Continue };
  Kind kind;
  int line = 0;
  std::string text;  // Text; Set/SetBlock/Macro: the name
  std::string attr;  // Set: `set ns.attr = ...`
  ExprPtr expr;      // Output, Set, For: the iterable; CallBlock: the macro call
  // If: (condition, body) per if/elif; else_body.
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;         // For, SetBlock, Macro, CallBlock (the caller's body)
  Body else_body;    // If, For
  std::vector<std::string> targets;  // For: loop variables
  ExprPtr filter;                    // For: `for x in xs if cond`
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro, CallBlock's caller: name and default (or null)
};

struct Program {
  Body body;
};

// Renders a parsed template with these variables (messages, add_generation_prompt, ...).
// raise_exception() in the template throws Error(kInvalidArgument) with its message; past
// a limit of RenderLimits (jinja_limits.hpp), or once limits.cancel reads true, it throws
// Error(kLimit); integer overflow throws Error(kLimit) and division by zero
// Error(kInvalidArgument) (jinja_ints.hpp).
std::string render(const Program& program, const Object& variables, const RenderLimits& limits = {});

// Parses template source with transformers' settings (trim_blocks, lstrip_blocks, the
// loopcontrols extension). Throws Error(kFormat) naming the line of a syntax error.
std::shared_ptr<Program> parse_template(const std::string& source);

}  // namespace brisk::jinja
