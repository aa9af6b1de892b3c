// Renders a parsed chat template (jinja_ast.hpp) with Jinja2's semantics where chat templates
// depend on them: `for` opens a scope (so `set` inside a loop does not leak out, which is
// what namespace() is for) and `if` does not; `and`/`or` return an operand; undefined prints
// as nothing, iterates as empty and fails when its attributes are read; macros render into
// a string of their own, and a `{% call %}` block's body is the called macro's caller().
// Filters, tests, methods and globals are in jinja_builtins.cpp; what each step and builtin
// may cost is metered by the render's Budget (jinja_limits.hpp).
#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.hpp"
#include "template/jinja_ast.hpp"
#include "template/jinja_builtins.hpp"

namespace brisk::jinja {
namespace {

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  Renderer(const Object& vars, const RenderLimits& limits) : lim_(limits), budget_(limits) {
    scopes_.push_back(global_functions(budget_, &namespaces_));
    scopes_.push_back(vars);
    scopes_.emplace_back();  // the template's own top-level names
  }
  ~Renderer() {
    for (const auto& ns : namespaces_) ns->clear();  // frees namespaces that hold themselves
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  std::string run(const Body& body) {
    exec(body);
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(int line, const std::string& what, ErrorCode code = ErrorCode::kInvalidArgument) {
    budget_.line = line;
    budget_.fail(code, what);
  }

  void emit(const std::string& s) {
    if (out_.size() + s.size() > lim_.max_output)
      fail(budget_.line, "the output exceeds " + std::to_string(lim_.max_output) + " bytes (RenderLimits::max_output)",
           ErrorCode::kLimit);
    budget_.work(s.size(), "output");
    out_ += s;
  }
  void step(int line) {
    budget_.line = line;
    budget_.step();
  }

  Value lookup(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (const auto& [k, v] : *s)
        if (k == name) return v;
    return Value();
  }
  void assign(const std::string& name, Value v) {
    for (auto& [k, old] : scopes_.back())
      if (k == name) {
        old = std::move(v);
        return;
      }
    scopes_.back().emplace_back(name, std::move(v));
  }

  Flow exec(const Body& body) {
    for (const auto& n : body) {
      const Flow f = exec(*n);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec(const Node& n) {
    step(n.line);
    switch (n.kind) {
      case Node::Kind::Text: emit(n.text); return Flow::Normal;
      case Node::Kind::Output: emit(to_str(eval(*n.expr), &budget_)); return Flow::Normal;
      case Node::Kind::If:
        for (const auto& [cond, body] : n.branches)
          if (eval(*cond).truthy()) return exec(body);
        return exec(n.else_body);
      case Node::Kind::For: return exec_for(n);
      case Node::Kind::Set: {
        Value v = eval(*n.expr);
        if (n.attr.empty()) {
          assign(n.text, std::move(v));
        } else {
          Value target = lookup(n.text);
          if (target.kind != Value::Kind::Object || !target.is_namespace)
            fail(n.line, "'" + n.text + "' is not a namespace: only namespace() attributes can be set");
          target.set(n.attr, std::move(v));
        }
        return Flow::Normal;
      }
      case Node::Kind::SetBlock: {
        std::string saved = std::move(out_);
        out_.clear();
        exec(n.body);
        Value v = Value::string(std::move(out_));
        out_ = std::move(saved);
        assign(n.text, std::move(v));
        return Flow::Normal;
      }
      case Node::Kind::Macro: assign(n.text, macro(n)); return Flow::Normal;
      case Node::Kind::CallBlock: emit(to_str(call(*n.expr, caller(n)), &budget_)); return Flow::Normal;
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  Flow exec_for(const Node& n) {
    const Value seq = eval(*n.expr);
    if (seq.is_string()) budget_.work(seq.str().size(), "for");
    Array items = seq.items();
    budget_.items(items.size(), "for");
    if (n.filter) {
      Array kept;
      scopes_.emplace_back();
      for (auto& it : items) {
        step(n.line);
        bind_targets(n, it);
        if (eval(*n.filter).truthy()) kept.push_back(it);
      }
      scopes_.pop_back();
      items = std::move(kept);
    }
    if (items.empty()) return exec(n.else_body);
    scopes_.emplace_back();
    const int64_t len = int64_t(items.size());
    for (int64_t k = 0; k < len; ++k) {
      step(n.line);
      bind_targets(n, items[size_t(k)]);
      Object loop = {{"index", Value::integer(k + 1)},
                     {"index0", Value::integer(k)},
                     {"revindex", Value::integer(len - k)},
                     {"revindex0", Value::integer(len - k - 1)},
                     {"first", Value::boolean(k == 0)},
                     {"last", Value::boolean(k == len - 1)},
                     {"length", Value::integer(len)},
                     {"previtem", k > 0 ? items[size_t(k - 1)] : Value()},
                     {"nextitem", k + 1 < len ? items[size_t(k + 1)] : Value()},
                     {"depth", Value::integer(1)},
                     {"depth0", Value::integer(0)},
                     {"cycle", cycle(k)}};
      assign("loop", Value::object(std::move(loop)));
      if (exec(n.body) == Flow::Break) break;
    }
    scopes_.pop_back();
    return Flow::Normal;
  }

  void bind_targets(const Node& n, const Value& item) {
    if (n.targets.size() == 1) {
      assign(n.targets[0], item);
      return;
    }
    if (item.kind != Value::Kind::Array || item.arr->size() != n.targets.size())
      fail(n.line, "cannot unpack a " + std::string(kind_name(item.kind)) + " into " +
                       std::to_string(n.targets.size()) + " loop variables");
    for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], (*item.arr)[k]);
  }

  // loop.cycle(a, b, ...): the argument at this iteration's index, round robin.
  static Value cycle(int64_t k) {
    return Value::callable([k](std::vector<Value>& args, Kwargs&) {
      return args.empty() ? Value() : args[size_t(k % int64_t(args.size()))];
    });
  }

  // A macro: a callable that renders its body with its parameters bound, seeing the
  // template's globals and top-level names but not the caller's loop variables.
  Value macro(const Node& n) {
    const Node* def = &n;
    return Value::callable([this, def](std::vector<Value>& args, Kwargs& kwargs) {
      return invoke(*def, {scopes_[0], scopes_[1], scopes_[2]}, args, kwargs);
    });
  }

  // A call block's caller(): its body, seeing the names where the block stands.
  Value caller(const Node& n) {
    const Node* def = &n;
    auto where = std::make_shared<const std::vector<Object>>(scopes_);
    return Value::callable([this, def, where](std::vector<Value>& args, Kwargs& kwargs) {
      return invoke(*def, *where, args, kwargs);
    });
  }

  // Renders a macro's (or caller's) body in scopes `base` plus one for its parameters (and
  // `caller`, when a call block passes one), into a string of its own.
  Value invoke(const Node& def, std::vector<Object> base, std::vector<Value>& args, Kwargs& kwargs) {
    if (++depth_ > lim_.max_depth) {
      --depth_;
      fail(def.line, "macros nest too deeply", ErrorCode::kLimit);
    }
    std::vector<Object> saved = std::exchange(scopes_, std::move(base));
    std::string out_saved = std::exchange(out_, std::string());
    try {
      scopes_.emplace_back();
      for (size_t k = 0; k < def.params.size(); ++k) {
        const auto& [name, fallback] = def.params[k];
        Value v;
        if (k < args.size()) v = args[k];
        for (auto& [key, kv] : kwargs)
          if (key == name) v = kv;
        if (!v.defined() && fallback) v = eval(*fallback);
        assign(name, v);
      }
      for (auto& [key, kv] : kwargs)
        if (key == "caller") assign(key, kv);
      exec(def.body);
    } catch (...) {
      scopes_ = std::move(saved);
      out_ = std::move(out_saved);
      --depth_;
      throw;
    }
    Value result = Value::string(std::exchange(out_, std::move(out_saved)));
    scopes_ = std::move(saved);
    --depth_;
    return result;
  }

  // A call expression; `caller`, when defined, goes to the callee as the keyword argument a
  // call block passes.
  Value call(const Expr& e, const Value& caller_fn = Value()) {
    const Value callee = eval(*e.args[0]);
    if (callee.kind != Value::Kind::Callable) fail(e.line, "calling something that is not a function");
    std::vector<Value> args;
    for (size_t k = 1; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
    Kwargs kwargs;
    for (const auto& [key, x] : e.kwargs) kwargs.emplace_back(key, eval(*x));
    if (caller_fn.defined()) kwargs.emplace_back("caller", caller_fn);
    budget_.line = e.line;
    return (*callee.fn)(args, kwargs);
  }

  Value eval(const Expr& e) {
    if (++depth_ > lim_.max_depth) {
      --depth_;
      fail(e.line, "the expression nests too deeply", ErrorCode::kLimit);
    }
    Value v = eval_inner(e);
    --depth_;
    return v;
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.value;
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::Attr: {
        const Value obj = eval(*e.args[0]);
        if (!obj.defined()) fail(e.line, "cannot read '" + e.name + "' of an undefined value");
        budget_.line = e.line;
        return get_attribute(obj, e.name, budget_);
      }
      case Expr::Kind::Index: {
        const Value obj = eval(*e.args[0]);
        if (!obj.defined()) fail(e.line, "cannot index an undefined value");
        const Value key = eval(*e.args[1]);
        budget_.line = e.line;
        return get_item(obj, key, budget_);
      }
      case Expr::Kind::Slice: {
        const Value obj = eval(*e.args[0]);
        Value parts[3];
        for (int k = 0; k < 3; ++k)
          if (e.args[size_t(k) + 1]) parts[k] = eval(*e.args[size_t(k) + 1]);
        budget_.line = e.line;
        return slice(obj, parts[0], parts[1], parts[2], budget_);
      }
      case Expr::Kind::Call: return call(e);
      case Expr::Kind::Filter:
      case Expr::Kind::Test: {
        Value input = eval(*e.args[0]);
        std::vector<Value> args;
        for (size_t k = 1; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
        Kwargs kwargs;
        for (const auto& [key, x] : e.kwargs) kwargs.emplace_back(key, eval(*x));
        budget_.line = e.line;
        if (e.kind == Expr::Kind::Filter) return apply_filter(e.name, input, args, kwargs, budget_);
        const bool r = apply_test(e.name, input, args, budget_);
        return Value::boolean(e.negated ? !r : r);
      }
      case Expr::Kind::Unary: {
        const Value x = eval(*e.args[0]);
        budget_.line = e.line;
        return unary_op(e.name, x, budget_);
      }
      case Expr::Kind::Binary: {
        if (e.name == "and") {
          Value a = eval(*e.args[0]);
          return a.truthy() ? eval(*e.args[1]) : a;
        }
        if (e.name == "or") {
          Value a = eval(*e.args[0]);
          return a.truthy() ? a : eval(*e.args[1]);
        }
        const Value a = eval(*e.args[0]), b = eval(*e.args[1]);
        budget_.line = e.line;
        return binary_op(e.name, a, b, budget_);
      }
      case Expr::Kind::Cond:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value();
      case Expr::Kind::List: {
        Array a;
        for (const auto& x : e.args) a.push_back(eval(*x));
        Value list = Value::array(std::move(a));
        list.is_tuple = e.name == "tuple";
        return list;
      }
      case Expr::Kind::Dict: {
        Value d = Value::object();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) d.set(to_str(eval(*e.args[k]), &budget_), eval(*e.args[k + 1]));
        return d;
      }
    }
    return Value();
  }

  const RenderLimits& lim_;
  Budget budget_;
  std::vector<std::shared_ptr<Object>> namespaces_;
  std::vector<Object> scopes_;
  std::string out_;
  int depth_ = 0;
};

}  // namespace

std::string render(const Program& program, const Object& variables, const RenderLimits& limits) {
  return Renderer(variables, limits).run(program.body);
}

}  // namespace brisk::jinja
