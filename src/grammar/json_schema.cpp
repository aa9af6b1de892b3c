#include "grammar/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "base/error.hpp"
#include "grammar/gbnf.hpp"
#include "grammar/int_range.hpp"
#include "grammar/regex.hpp"

namespace brisk::grammar {
namespace {

using json = nlohmann::ordered_json;
using Element = GrammarBuilder::Element;
using Sequence = GrammarBuilder::Sequence;

// The JSON lexicon in GBNF; `space` as llama.cpp's converter allows it (bounded, so a model
// cannot fill its output with blank lines).
constexpr const char* kLexicon = R"(
space ::= | " " | "\n" [ \t]{0,20}
json-char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt/] | "u" [0-9a-fA-F]{4})
json-string ::= "\"" json-char* "\""
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" space ( json-string space ":" space json-value space ( "," space json-string space ":" space json-value space )* )? "}"
json-array ::= "[" space ( json-value space ( "," space json-value space )* )? "]"
)";

// Regular formats of JSON Schema's `format`, as regexes over the string's value.
const std::map<std::string, std::string>& formats() {
  static const std::map<std::string, std::string> f = {
      {"date", R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01]))"},
      {"time", R"(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
      {"date-time", R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
      {"uuid", R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"},
      {"email", R"([a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9-]{1,63}(\.[a-zA-Z0-9-]{1,63}){1,8})"},
      {"ipv4", R"(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))"},
      {"uri", R"([a-zA-Z][a-zA-Z0-9+.-]{0,31}:[^ \t\n\r"\\<>]{1,2000})"},
  };
  return f;
}

const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id",
                                            "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                                            "definitions", "discriminator", "markdownDescription"};

class SchemaConverter {
 public:
  SchemaConverter(const json& root, const JsonSchemaOptions& o) : root_(root), options_(o) {
    parse_gbnf(kLexicon, b_);
  }

  Grammar build() {
    const uint32_t root = b_.rule("root");
    const JsonSchemaOptions& o = options_;
    if (o.before.empty() && o.after.empty() && o.max_count == 1) {
      b_.add_alternative(root, {value(root_, "#"), rule("space")});
      return b_.build("root");
    }
    const uint32_t one = b_.rule("one");
    Sequence seq = b_.literal(o.before);
    seq.push_back(value(root_, "#"));
    const Sequence after = b_.literal(o.after);
    seq.insert(seq.end(), after.begin(), after.end());
    b_.add_alternative(one, std::move(seq));
    Sequence whole = {GrammarBuilder::ref(one)};
    if (o.max_count != 1) {
      Sequence next = b_.literal(o.between);
      next.push_back(GrammarBuilder::ref(one));
      whole.push_back(b_.repeat(next, 0, o.max_count < 0 ? -1 : o.max_count - 1, "more"));
    }
    b_.add_alternative(root, std::move(whole));
    return b_.build("root");
  }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, "JSON schema at " + path + ": " + what);
  }
  Element rule(const std::string& name) { return GrammarBuilder::ref(b_.rule(name)); }
  Element lit(const std::string& text) {
    const uint32_t r = b_.fresh_rule("lit");
    b_.add_alternative(r, b_.literal(text));
    return GrammarBuilder::ref(r);
  }

  void check_keywords(const json& s, const std::string& path) {
    static const std::set<std::string> known = {
        "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
        "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "minLength", "maxLength", "pattern", "format", "nullable",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!known.count(it.key()) && !kAnnotations.count(it.key()))
        fail(path, "the keyword '" + it.key() + "' is not supported");
  }

  Element value(const json& s, const std::string& path) {
    Depth d(depth_, path);
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema false matches nothing");
      return rule("json-value");
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
    check_keywords(s, path);
    if (s.contains("nullable") && s["nullable"] == true) {
      json rest = s;
      rest.erase("nullable");
      return alternatives({value(rest, path), rule("json-null")});
    }
    if (s.contains("$ref")) return ref(s["$ref"], path);
    if (s.contains("const")) return lit(s["const"].dump());
    if (s.contains("enum")) return enumeration(s["enum"], path);
    for (const char* k : {"anyOf", "oneOf"})
      if (s.contains(k)) return any_of(s[k], path + "/" + k);
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].size() != 1) fail(path, "allOf with more than one schema is not supported");
      return value(s["allOf"][0], path + "/allOf/0");
    }
    return typed(s, path);
  }

  Element typed(const json& s, const std::string& path) {
    const bool bounded = s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                         s.contains("exclusiveMaximum");
    if (bounded && !(s.contains("type") && s["type"] == "integer"))
      fail(path, "minimum and maximum are supported on {\"type\": \"integer\"} only");
    if (!s.contains("type")) {
      if (s.contains("properties") || s.contains("additionalProperties")) return object(s, path);
      if (s.contains("items") || s.contains("prefixItems")) return array(s, path);
      if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength"))
        return string(s, path);
      return rule("json-value");
    }
    const json& t = s["type"];
    if (t.is_array()) {
      std::vector<Element> alts;
      for (const json& one : t) {
        json copy = s;
        copy["type"] = one;
        alts.push_back(typed(copy, path));
      }
      if (alts.empty()) fail(path, "an empty list of types");
      return alternatives(alts);
    }
    if (!t.is_string()) fail(path, "type must be a string or a list of strings");
    const std::string type = t.get<std::string>();
    if (type == "object") return object(s, path);
    if (type == "array") return array(s, path);
    if (type == "string") return string(s, path);
    if (type == "integer") return bounded ? integer(s, path) : rule("json-integer");
    if (type == "number") return rule("json-number");
    if (type == "boolean") return rule("json-boolean");
    if (type == "null") return rule("json-null");
    fail(path, "unknown type '" + type + "'");
  }

  // An integer within minimum / maximum (inclusive) and exclusiveMinimum / exclusiveMaximum
  // (numbers, or draft 4's booleans that make minimum / maximum exclusive).
  Element integer(const json& s, const std::string& path) {
    const double big = double(kMaxJsonInteger);
    double lo = -big, hi = big;
    auto bound = [&](const char* key) {
      if (!s[key].is_number()) fail(path, std::string(key) + " must be a number");
      return std::clamp(s[key].get<double>(), -2 * big, 2 * big);
    };
    auto flag = [&](const char* key) { return s.contains(key) && s[key].is_boolean() && s[key].get<bool>(); };
    if (s.contains("minimum")) lo = flag("exclusiveMinimum") ? std::floor(bound("minimum")) + 1 : std::ceil(bound("minimum"));
    if (s.contains("maximum")) hi = flag("exclusiveMaximum") ? std::ceil(bound("maximum")) - 1 : std::floor(bound("maximum"));
    if (s.contains("exclusiveMinimum") && !s["exclusiveMinimum"].is_boolean())
      lo = std::max(lo, std::floor(bound("exclusiveMinimum")) + 1);
    if (s.contains("exclusiveMaximum") && !s["exclusiveMaximum"].is_boolean())
      hi = std::min(hi, std::ceil(bound("exclusiveMaximum")) - 1);
    const auto patterns = integer_range_patterns(int64_t(std::clamp(lo, -big, big)), int64_t(std::clamp(hi, -big, big)));
    if (lo > hi || patterns.empty()) fail(path, "no integer lies within its minimum and maximum");
    const uint32_t r = b_.fresh_rule("int-range");
    for (const DigitPattern& p : patterns) {
      Sequence seq;
      for (auto [a, b] : p) {
        ByteSet set;
        set.add_range(uint8_t(a), uint8_t(b));
        seq.push_back(b_.bytes(set));
      }
      b_.add_alternative(r, std::move(seq));
    }
    return GrammarBuilder::ref(r);
  }

  Element alternatives(const std::vector<Element>& alts) {
    const uint32_t r = b_.fresh_rule("alt");
    for (const Element& e : alts) b_.add_alternative(r, {e});
    return GrammarBuilder::ref(r);
  }

  Element any_of(const json& list, const std::string& path) {
    if (!list.is_array() || list.empty()) fail(path, "must be a non-empty list of schemas");
    std::vector<Element> alts;
    for (size_t i = 0; i < list.size(); ++i) alts.push_back(value(list[i], path + "/" + std::to_string(i)));
    return alternatives(alts);
  }

  Element enumeration(const json& list, const std::string& path) {
    if (!list.is_array() || list.empty()) fail(path, "enum must be a non-empty list");
    const uint32_t r = b_.fresh_rule("enum");
    for (const json& v : list) b_.add_alternative(r, b_.literal(v.dump()));
    return GrammarBuilder::ref(r);
  }

  // "#", "#/$defs/Name", "#/definitions/Name" or any JSON pointer into the root schema; one
  // rule per target, so recursive schemas are recursive rules.
  Element ref(const json& target, const std::string& path) {
    if (!target.is_string()) fail(path, "$ref must be a string");
    const std::string t = target.get<std::string>();
    auto it = refs_.find(t);
    if (it != refs_.end()) return GrammarBuilder::ref(it->second);
    if (t.empty() || t[0] != '#') fail(path, "only local references (#...) are supported, not '" + t + "'");
    const json* to = &root_;
    if (t.size() > 1) {
      try {
        to = &root_.at(json::json_pointer(t.substr(1)));
      } catch (const json::exception&) {
        fail(path, "$ref '" + t + "' does not point into the schema");
      }
    }
    const uint32_t r = b_.fresh_rule("ref");
    refs_.emplace(t, r);
    b_.add_alternative(r, {value(*to, t)});
    return GrammarBuilder::ref(r);
  }

  Element string(const json& s, const std::string& path) {
    const uint32_t r = b_.fresh_rule("string");
    if (s.contains("pattern") || s.contains("format")) {
      std::string re;
      if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) fail(path, "pattern must be a string");
        re = s["pattern"].get<std::string>();
        if (!re.empty() && re[0] == '^') re.erase(0, 1);
        if (!re.empty() && re.back() == '$' && (re.size() < 2 || re[re.size() - 2] != '\\')) re.pop_back();
      } else {
        auto f = formats().find(s["format"].is_string() ? s["format"].get<std::string>() : "");
        if (f == formats().end()) return rule("json-string");  // other formats are annotations
        re = f->second;
      }
      try {
        b_.add_alternative(r, {b_.byte('"'), GrammarBuilder::ref(regex_rule(re, b_, RegexOutput::JsonString)),
                               b_.byte('"')});
      } catch (const Error& e) {
        fail(path + "/pattern", e.what());
      }
      return GrammarBuilder::ref(r);
    }
    const int lo = count(s, "minLength", 0, path), hi = count(s, "maxLength", -1, path);
    if (lo == 0 && hi < 0) return rule("json-string");
    b_.add_alternative(r, {b_.byte('"'), b_.repeat({rule("json-char")}, lo, hi, "chars"), b_.byte('"')});
    return GrammarBuilder::ref(r);
  }

  int count(const json& s, const char* key, int missing, const std::string& path) {
    if (!s.contains(key)) return missing;
    if (!s[key].is_number_integer() || s[key].get<int64_t>() < 0 || s[key].get<int64_t>() > 10000)
      fail(path, std::string(key) + " must be an integer from 0 to 10000");
    return int(s[key].get<int64_t>());
  }

  Element array(const json& s, const std::string& path) {
    std::vector<Element> fixed;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) fail(path, "prefixItems must be a list of schemas");
      for (size_t i = 0; i < s["prefixItems"].size(); ++i)
        fixed.push_back(value(s["prefixItems"][i], path + "/prefixItems/" + std::to_string(i)));
    }
    const bool more = !s.contains("items") || !(s["items"].is_boolean() && !s["items"].get<bool>());
    const Element item = s.contains("items") && more ? value(s["items"], path + "/items") : rule("json-value");
    int lo = count(s, "minItems", 0, path), hi = count(s, "maxItems", -1, path);
    if (hi >= 0 && hi < lo) fail(path, "maxItems is below minItems");
    const uint32_t r = b_.fresh_rule("array");
    Sequence seq = {b_.byte('['), rule("space")};
    // The fixed items first, then the rest, each after a comma except the very first.
    const int n_fixed = int(fixed.size());
    const int rest_lo = std::max(0, lo - n_fixed), rest_hi = !more ? 0 : hi < 0 ? -1 : std::max(0, hi - n_fixed);
    Sequence sep = {b_.byte(','), rule("space")};
    Sequence body;
    for (int i = 0; i < n_fixed; ++i) {
      if (i) body.insert(body.end(), sep.begin(), sep.end());
      body.push_back(fixed[size_t(i)]);
      body.push_back(rule("space"));
    }
    Sequence one = {item, rule("space")};
    Sequence next = sep;
    next.insert(next.end(), one.begin(), one.end());
    if (n_fixed > 0 || rest_lo > 0) {  // no doubt about the first comma
      if (n_fixed == 0) body.insert(body.end(), one.begin(), one.end());
      const int lo2 = n_fixed == 0 ? rest_lo - 1 : rest_lo, hi2 = n_fixed == 0 && rest_hi > 0 ? rest_hi - 1 : rest_hi;
      if (hi2 != 0) body.push_back(b_.repeat(next, lo2, hi2, "items"));
      seq.insert(seq.end(), body.begin(), body.end());
    } else if (rest_hi != 0) {
      Sequence items = one;
      if (rest_hi != 1) items.push_back(b_.repeat(next, 0, rest_hi < 0 ? -1 : rest_hi - 1, "items"));
      seq.push_back(b_.repeat(items, 0, 1, "items"));
    }
    seq.push_back(b_.byte(']'));
    b_.add_alternative(r, std::move(seq));
    return GrammarBuilder::ref(r);
  }

  // {"a": .., "b": ..}: the declared properties in order, each optional one skippable, then
  // the additional ones where allowed. Rule chain(i, first) writes properties i.. (first: no
  // comma before the next one written).
  Element object(const json& s, const std::string& path) {
    struct Prop {
      std::string key;
      Element value;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(path, "required must be a list of names");
      for (const json& n : s["required"]) {
        if (!n.is_string()) fail(path, "required must be a list of names");
        required.insert(n.get<std::string>());
      }
    }
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) fail(path, "properties must be an object");
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it)
        props.push_back({it.key(), value(it.value(), path + "/properties/" + it.key()), required.count(it.key()) > 0});
    }
    std::optional<Element> extra;
    const json* add = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    if (add ? !(add->is_boolean() && !add->get<bool>()) : !options_.strict)
      extra = add && add->is_object() ? value(*add, path + "/additionalProperties") : rule("json-value");
    for (const std::string& name : required) {
      bool found = false;
      for (const Prop& p : props) found = found || p.key == name;
      if (!found && !extra) fail(path, "required property '" + name + "' is not in properties");
    }
    Sequence sep = {b_.byte(','), rule("space")};
    auto kv = [&](Element key, Element v) {
      Sequence seq = {key, rule("space"), b_.byte(':'), rule("space"), v, rule("space")};
      return seq;
    };
    std::map<std::pair<size_t, bool>, uint32_t> chain;
    auto link = [&](auto&& self, size_t i, bool first) -> Element {
      auto it = chain.find({i, first});
      if (it != chain.end()) return GrammarBuilder::ref(it->second);
      const uint32_t r = b_.fresh_rule("props");
      chain.emplace(std::make_pair(i, first), r);
      if (i == props.size()) {
        if (extra) {
          Sequence more = sep;
          const Sequence one = kv(rule("json-string"), *extra);
          more.insert(more.end(), one.begin(), one.end());
          if (first) {
            Sequence items = one;
            items.push_back(b_.repeat(more, 0, -1, "extra"));
            b_.add_alternative(r, {b_.repeat(items, 0, 1, "extra")});
          } else {
            b_.add_alternative(r, {b_.repeat(more, 0, -1, "extra")});
          }
        } else {
          b_.add_alternative(r, {});
        }
        return GrammarBuilder::ref(r);
      }
      Sequence with = first ? Sequence{} : sep;
      const Sequence one = kv(lit(json(props[i].key).dump()), props[i].value);
      with.insert(with.end(), one.begin(), one.end());
      with.push_back(self(self, i + 1, false));
      b_.add_alternative(r, std::move(with));
      if (!props[i].required) b_.add_alternative(r, {self(self, i + 1, first)});
      return GrammarBuilder::ref(r);
    };
    const uint32_t r = b_.fresh_rule("object");
    b_.add_alternative(r, {b_.byte('{'), rule("space"), link(link, 0, true), b_.byte('}')});
    return GrammarBuilder::ref(r);
  }

  // Nesting of schemas within schemas: bounded, so a hostile schema cannot exhaust the stack.
  struct Depth {
    int& d;
    Depth(int& depth, const std::string& path) : d(depth) {
      if (++d > 64) fail(path, "schemas nest more than 64 deep");
    }
    ~Depth() { --d; }
  };
  int depth_ = 0;
  json root_;
  JsonSchemaOptions options_;
  GrammarBuilder b_;
  std::map<std::string, uint32_t> refs_;
};

}  // namespace

Grammar compile_json_schema(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options) {
  return SchemaConverter(schema, options).build();
}

Grammar compile_json_object() {
  GrammarBuilder b;
  parse_gbnf(kLexicon, b);
  const uint32_t root = b.rule("root");
  b.add_alternative(root, {GrammarBuilder::ref(b.rule("json-object")), GrammarBuilder::ref(b.rule("space"))});
  return b.build("root");
}

}  // namespace brisk::grammar
