#include "grammar/grammar.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "grammar/utf8_ranges.hpp"

namespace brisk::grammar {

uint32_t GrammarBuilder::rule(const std::string& name) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  const auto id = uint32_t(defs_.size());
  defs_.push_back(Def{name, {}, false});
  by_name_.emplace(name, id);
  return id;
}

uint32_t GrammarBuilder::fresh_rule(const std::string& base) {
  if (defs_.size() > kMaxSlots)
    throw Error(ErrorCode::kInvalidArgument, "the grammar is too large (over " + std::to_string(kMaxSlots) + " rules)");
  for (size_t i = defs_.size();; ++i) {
    const std::string name = base + "-" + std::to_string(i);
    if (!by_name_.count(name)) return rule(name);
  }
}

void GrammarBuilder::add_alternative(uint32_t rule, Sequence seq) {
  defs_[rule].alternatives.push_back(std::move(seq));
  defs_[rule].defined = true;
}

GrammarBuilder::Element GrammarBuilder::bytes(const ByteSet& set) {
  for (size_t i = 0; i < sets_.size(); ++i)
    if (sets_[i] == set) return Element{false, uint32_t(i)};
  sets_.push_back(set);
  return Element{false, uint32_t(sets_.size() - 1)};
}

GrammarBuilder::Element GrammarBuilder::byte(uint8_t b) {
  ByteSet s;
  s.add(b);
  return bytes(s);
}

GrammarBuilder::Sequence GrammarBuilder::literal(const std::string& text) {
  Sequence seq;
  for (unsigned char c : text) seq.push_back(byte(c));
  return seq;
}

// One-byte patterns share one byte set; longer ones are alternatives of a helper rule.
GrammarBuilder::Element GrammarBuilder::code_points(const std::vector<std::pair<uint32_t, uint32_t>>& ranges,
                                                    bool negate, const std::string& base) {
  ByteSet ascii;
  bool any_ascii = false;
  std::vector<Sequence> longer;
  for (auto [lo, hi] : normalize_ranges(ranges, negate))
    for (const Utf8Sequence& seq : utf8_sequences(lo, hi)) {
      if (seq.size() == 1) {
        ascii.add_range(seq[0].first, seq[0].second), any_ascii = true;
        continue;
      }
      Sequence elems;
      for (auto [a, b] : seq) {
        ByteSet set;
        set.add_range(a, b);
        elems.push_back(bytes(set));
      }
      longer.push_back(std::move(elems));
    }
  if (longer.empty() && any_ascii) return bytes(ascii);
  const uint32_t r = fresh_rule(base);
  if (any_ascii) add_alternative(r, {bytes(ascii)});
  for (Sequence& seq : longer) add_alternative(r, std::move(seq));
  if (!any_ascii && longer.empty())
    throw Error(ErrorCode::kInvalidArgument, "a character class that matches nothing", base);
  return ref(r);
}

bool GrammarBuilder::quantifier(char c, int& min, int& max) {
  if (c != '*' && c != '+' && c != '?') return false;
  min = c == '+' ? 1 : 0;
  max = c == '?' ? 1 : -1;
  return true;
}

// body{min,max} as rules: R ::= item^min tail, where tail ::= item tail | "" when unbounded,
// or a chain of (max - min) optional items.
GrammarBuilder::Element GrammarBuilder::repeat(const Sequence& body, int min, int max, const std::string& base) {
  if (min < 0 || (max >= 0 && max < min))
    throw Error(ErrorCode::kInvalidArgument, "repetition bounds {" + std::to_string(min) + "," + std::to_string(max) +
                                                 "} are not a range", base);
  if (max > 10000 || min > 10000)
    throw Error(ErrorCode::kInvalidArgument, "repetition bound above 10000", base);
  Element item = body.size() == 1 ? body[0] : Element{};
  if (body.size() != 1) {
    const uint32_t r = fresh_rule(base);
    add_alternative(r, body);
    item = ref(r);
  }
  const uint32_t whole = fresh_rule(base);
  repeated_ += size_t(min) + size_t(std::max(max - min, 0));
  if (repeated_ > kMaxSlots)
    throw Error(ErrorCode::kInvalidArgument, "the grammar is too large (its repetitions expand past " +
                                                 std::to_string(kMaxSlots) + " elements)");
  Sequence seq(size_t(min), item);
  if (max < 0) {
    const uint32_t tail = fresh_rule(base);
    add_alternative(tail, {item, ref(tail)});
    add_alternative(tail, {});
    seq.push_back(ref(tail));
  } else if (max > min) {
    uint32_t next = fresh_rule(base);  // up to one more item
    add_alternative(next, {item});
    add_alternative(next, {});
    for (int k = max - min - 1; k > 0; --k) {
      const uint32_t outer = fresh_rule(base);
      add_alternative(outer, {item, ref(next)});
      add_alternative(outer, {});
      next = outer;
    }
    seq.push_back(ref(next));
  }
  add_alternative(whole, std::move(seq));
  return ref(whole);
}

// A rule that can reach itself again before consuming a byte would expand forever.
void GrammarBuilder::check_left_recursion() const {
  const size_t n = defs_.size();
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : defs_[r].alternatives) {
        bool all = true;
        for (const Element& e : alt) all = all && e.is_rule && nullable[e.index];
        if (all) {
          nullable[r] = true, changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> first(n);  // rules reachable at the left edge
  for (size_t r = 0; r < n; ++r)
    for (const Sequence& alt : defs_[r].alternatives)
      for (const Element& e : alt) {
        if (!e.is_rule) break;
        first[r].push_back(e.index);
        if (!nullable[e.index]) break;
      }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> path;
  for (uint32_t start = 0; start < n; ++start) {
    if (color[start]) continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == first[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t next = first[r][i++];
      if (color[next] == 1)
        throw Error(ErrorCode::kInvalidArgument, "grammar rule '" + defs_[next].name + "' is left-recursive");
      if (color[next] == 0) color[next] = 1, path.push_back({next, 0});
    }
  }
}

namespace {
// A reference to the rule itself at the end of one of its alternatives: a loop (tail ::=
// item tail | ""), which the matcher runs without a stack node; it does not make the rule
// recursive, and a copy of the rule loops on itself.
bool self_tail(const GrammarBuilder::Sequence& alt, size_t i, uint32_t rule) {
  return alt[i].is_rule && alt[i].index == rule && i + 1 == alt.size();
}
}  // namespace

// Per rule: the rules it references (self tail calls left out) and whether it can reach
// itself through them.
GrammarBuilder::CallGraph GrammarBuilder::call_graph() const {
  const size_t n = defs_.size();
  CallGraph cg;
  cg.calls.resize(n);
  cg.recursive.assign(n, false);
  for (uint32_t r = 0; r < n; ++r)
    for (const Sequence& alt : defs_[r].alternatives)
      for (size_t i = 0; i < alt.size(); ++i)
        if (alt[i].is_rule && !self_tail(alt, i, r)) cg.calls[r].push_back(alt[i].index);
  for (uint32_t r = 0; r < n; ++r) {
    std::vector<bool> seen(n, false);
    std::vector<uint32_t> todo = cg.calls[r];
    while (!todo.empty() && !cg.recursive[r]) {
      const uint32_t c = todo.back();
      todo.pop_back();
      if (c == r) cg.recursive[r] = true;
      if (seen[c]) continue;
      seen[c] = true;
      todo.insert(todo.end(), cg.calls[c].begin(), cg.calls[c].end());
    }
  }
  return cg;
}

// A copy of rule r for one more call site; its own self loops refer to the copy.
uint32_t GrammarBuilder::copy_rule(uint32_t r) {
  const uint32_t copy = fresh_rule(defs_[r].name);
  defs_[copy].alternatives = defs_[r].alternatives;
  defs_[copy].defined = true;
  for (Sequence& alt : defs_[copy].alternatives)
    if (!alt.empty() && self_tail(alt, alt.size() - 1, r)) alt.back().index = copy;
  return copy;
}

// Gives each use of a small non-recursive rule its own copy (recursively, within a budget
// of copied elements), so that every such rule has one caller and the slots after it are
// fixed: the token masks then rarely depend on the stack. Loops count as non-recursive.
void GrammarBuilder::clone_shared_rules(uint32_t root) {
  constexpr size_t kMaxRuleSize = 2048, kBudget = 60000;
  const size_t n = defs_.size();
  if (n > 4000) return;
  const CallGraph cg = call_graph();
  std::vector<size_t> size(n, 0);  // elements, with callees expanded
  std::vector<bool> sized(n, false);
  auto size_of = [&](auto&& self, uint32_t r) -> size_t {
    if (cg.recursive[r]) return kMaxRuleSize + 1;
    if (sized[r]) return size[r];
    size_t total = 0;
    for (const Sequence& alt : defs_[r].alternatives) total += alt.size() + 1;
    for (uint32_t c : cg.calls[r]) {
      if (total > kMaxRuleSize) break;
      total += self(self, c);
    }
    sized[r] = true;
    return size[r] = std::min(total, kMaxRuleSize + 1);
  };
  std::vector<int> uses(n, 0);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t c : cg.calls[r]) ++uses[c];
  size_t added = 0;
  std::vector<uint32_t> todo = {root};
  std::vector<bool> done(n, false);
  while (!todo.empty()) {
    const uint32_t r = todo.back();
    todo.pop_back();
    if (r >= done.size()) done.resize(r + 1, false);
    if (done[r]) continue;
    done[r] = true;
    for (size_t a = 0; a < defs_[r].alternatives.size(); ++a)
      for (size_t i = 0; i < defs_[r].alternatives[a].size(); ++i) {
        const Element e = defs_[r].alternatives[a][i];
        if (!e.is_rule || self_tail(defs_[r].alternatives[a], i, r)) continue;
        uint32_t target = e.index;
        const uint32_t original = target < n ? target : n;  // copies are never copied again
        if (original < n && !cg.recursive[original] && uses[original] > 1 &&
            size_of(size_of, original) <= kMaxRuleSize) {
          size_t own = 0;
          for (const Sequence& alt : defs_[original].alternatives) own += alt.size() + 1;
          if (added + own <= kBudget) {
            --uses[original];
            target = copy_rule(original);
            for (uint32_t c : cg.calls[original]) ++uses[c];  // its callees gain a use each
            added += own;
            defs_[r].alternatives[a][i].index = target;
          }
        }
        todo.push_back(target);
      }
  }
}

Grammar GrammarBuilder::build(const std::string& root) {
  auto it = by_name_.find(root);
  if (it == by_name_.end() || !defs_[it->second].defined)
    throw Error(ErrorCode::kInvalidArgument, "the grammar has no rule '" + root + "'");
  for (const Def& d : defs_)
    for (const Sequence& alt : d.alternatives)
      for (const Element& e : alt)
        if (e.is_rule && !defs_[e.index].defined)
          throw Error(ErrorCode::kInvalidArgument,
                      "grammar rule '" + defs_[e.index].name + "' is used in '" + d.name + "' but never defined");
  size_t elements = 0;
  for (const Def& d : defs_)
    for (const Sequence& alt : d.alternatives) elements += alt.size() + 1;
  if (elements > kMaxSlots)
    throw Error(ErrorCode::kInvalidArgument, "the grammar is too large (" + std::to_string(elements) +
                                                 " elements after expanding repetitions; the limit is " +
                                                 std::to_string(kMaxSlots) + ")");
  check_left_recursion();
  clone_shared_rules(it->second);
  Grammar g;
  g.root = it->second;
  g.sets = sets_;
  g.alternatives.resize(defs_.size());
  for (size_t r = 0; r < defs_.size(); ++r) {
    g.rule_names.push_back(defs_[r].name);
    for (const Sequence& alt : defs_[r].alternatives) {
      g.alternatives[r].push_back(uint32_t(g.slots.size()));
      for (const Element& e : alt)
        g.slots.push_back({e.is_rule ? Grammar::Kind::Rule : Grammar::Kind::Bytes, e.index});
      g.slots.push_back({Grammar::Kind::End, 0});
    }
  }
  return g;
}

}  // namespace brisk::grammar
