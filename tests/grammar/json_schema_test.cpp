// JSON Schema and regex grammars: instances that validate match, others do not, and
// unsupported keywords fail with their name. (The server tests validate sampled outputs with
// the jsonschema package; these pin the converter itself.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/matcher.hpp"
#include "grammar/regex.hpp"

namespace brisk::grammar {
namespace {

using ojson = nlohmann::ordered_json;

bool matches(const Grammar& g, const std::string& text) {
  Matcher m(g);
  State s = m.start();
  return m.advance(s, text) && s.accept;
}

struct Case {
  const char* schema;
  std::vector<const char*> good, bad;
};

void check(const Case& c) {
  const Grammar g = compile_json_schema(ojson::parse(c.schema));
  for (const char* t : c.good) EXPECT_TRUE(matches(g, t)) << c.schema << "\n  should take: " << t;
  for (const char* t : c.bad) EXPECT_FALSE(matches(g, t)) << c.schema << "\n  should refuse: " << t;
}

TEST(JsonSchema, ScalarTypes) {
  check({R"({"type": "integer"})", {"0", "-12", "123456"}, {"01", "1.5", "\"1\"", "-"}});
  check({R"({"type": "number"})", {"0", "-1.25", "3e10", "2.5E-3"}, {".5", "1.", "+1"}});
  check({R"({"type": "boolean"})", {"true", "false"}, {"True", "1"}});
  check({R"({"type": "null"})", {"null"}, {"nil"}});
  check({R"({"type": "string"})", {R"("")", R"("a \"q\" \\ \u00e9 é")"}, {R"("a)", "\"a\nb\"", R"("\x")"}});
  check({R"({"type": ["string", "null"]})", {R"("x")", "null"}, {"1"}});
  check({R"({"type": "string", "nullable": true})", {R"("x")", "null"}, {"1"}});
}

TEST(JsonSchema, ObjectsInDeclaredOrder) {
  check({R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
             "required": ["name", "age"]})",
         {R"({"name": "Ada", "age": 36})", R"({"name":"Ada","age":36})", "{\n  \"name\": \"Ada\",\n  \"age\": 36\n}"},
         {R"({"age": 36, "name": "Ada"})", R"({"name": "Ada"})", R"({"name": "Ada", "age": 36, "x": 1})", "{}"}});
  // Optional properties may each be left out, commas stay right.
  check({R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
             "c": {"type": "integer"}}, "required": ["b"]})",
         {R"({"b": 2})", R"({"a": 1, "b": 2})", R"({"b": 2, "c": 3})", R"({"a": 1, "b": 2, "c": 3})"},
         {R"({"a": 1})", R"({, "b": 2})", R"({"b": 2,})", R"({"a": 1 "b": 2})"}});
  check({R"({"type": "object", "properties": {"a": {"type": "integer"}}})", {"{}", R"({"a": 1})"}, {R"({"a": 1,})"}});
}

TEST(JsonSchema, AdditionalProperties) {
  check({R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}})",
         {R"({"a": 1, "x": "y", "z": "w"})", "{}", R"({"x": "y"})"}, {R"({"x": 1})"}});
  check({R"({"type": "object", "additionalProperties": true})", {R"({"k": [1, {"j": null}]})"}, {"[]"}});
  // Not strict: undeclared properties are allowed unless said otherwise.
  JsonSchemaOptions not_strict;
  not_strict.strict = false;
  const Grammar loose = compile_json_schema(ojson::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}})"),
                                            not_strict);
  EXPECT_TRUE(matches(loose, R"({"a": 1, "b": [true]})"));
}

TEST(JsonSchema, Arrays) {
  check({R"({"type": "array", "items": {"type": "integer"}})", {"[]", "[1]", "[1, 2, 3]"}, {"[1,]", "[\"a\"]", "[,1]"}});
  check({R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})",
         {"[1, 2]", "[1, 2, 3]"}, {"[]", "[1]", "[1, 2, 3, 4]"}});
  check({R"({"type": "array", "items": {"type": "integer"}, "maxItems": 1})", {"[]", "[7]"}, {"[7, 8]"}});
  check({R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
         {R"(["a", 1])"}, {R"(["a"])", R"(["a", 1, 2])", R"([1, "a"])"}});
  check({R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"}})",
         {R"(["a"])", R"(["a", true, false])"}, {R"(["a", 1])"}});
}

TEST(JsonSchema, EnumConstAnyOfAndRefs) {
  check({R"({"enum": ["red", "green", 3, null]})", {R"("red")", "3", "null"}, {R"("blue")", "4"}});
  check({R"({"const": {"k": [1, 2]}})", {R"({"k":[1,2]})"}, {R"({"k": [1, 2]})"}});
  check({R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}]})",
         {"5", R"({"x": true})"}, {R"({"x": 1})", R"("5")"}});
  check({R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
             "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}},
             "$ref": "#/$defs/node"})",
         {R"({"v": 1, "next": {"v": 2, "next": null}})"}, {R"({"v": 1, "next": {"v": 2}})"}});
  check({R"({"allOf": [{"type": "integer"}]})", {"1"}, {"\"1\""}});
}

TEST(JsonSchema, StringConstraints) {
  check({R"({"type": "string", "minLength": 2, "maxLength": 3})", {R"("ab")", R"("abc")", R"("\n\"")"}, {R"("a")", R"("abcd")"}});
  check({R"({"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"})", {R"("AB-12")"}, {R"("ab-12")", R"("AB-")"}});
  check({R"({"type": "string", "pattern": "a\"b\\\\c"})", {R"("a\"b\\c")"}, {R"("a"b\c")"}});
  check({R"({"type": "string", "format": "date"})", {R"("2024-02-29")"}, {R"("2024-13-01")", R"("24-01-01")"}});
  check({R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123")"}});
  check({R"({"type": "string", "format": "date-time"})", {R"("2024-01-02T03:04:05Z")", R"("2024-01-02T03:04:05.5+01:00")"},
         {R"("2024-01-02 03:04:05")"}});
  check({R"({"type": "string", "format": "ipv4"})", {R"("192.168.0.1")"}, {R"("256.1.1.1")"}});
}

std::string error_of(const char* schema) {
  try {
    compile_json_schema(ojson::parse(schema));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  EXPECT_NE(error_of(R"({"type": "number", "minimum": 3})").find("integer"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "integer", "minimum": 3, "maximum": 2})").find("no integer"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "integer", "minimum": "3"})").find("must be a number"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "object", "patternProperties": {}})").find("'patternProperties'"), std::string::npos);
  EXPECT_NE(error_of(R"({"not": {"type": "null"}})").find("'not'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "strin"})").find("'strin'"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("does not point"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "http://x/y.json"})").find("local"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "(a)\\1"})").find("backreference"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "object", "required": ["a"]})").find("'a'"), std::string::npos);
  EXPECT_NE(error_of(R"({"allOf": [{"type": "integer"}, {"type": "number"}]})").find("allOf"), std::string::npos);
  EXPECT_NE(error_of(R"(false)").find("nothing"), std::string::npos);
  // Annotations are fine.
  EXPECT_EQ(error_of(R"({"title": "T", "description": "d", "type": "integer", "default": 1, "examples": [2]})"), "");
}

// Integer bounds against brute force: for ranges around the digit-count boundaries and
// zero, every integer of a window (written as JSON writes it) matches exactly when inside;
// leading zeros and -0 never match.
TEST(JsonSchema, IntegerBoundsMatchExactlyTheRange) {
  const std::vector<int64_t> edges = {-1001, -100, -99, -10, -9, -1, 0, 1, 7, 9, 10, 19, 99, 100, 101, 999, 1000, 1234};
  for (int64_t lo : edges)
    for (int64_t hi : edges) {
      if (hi < lo) continue;
      const std::string schema = R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" +
                                 std::to_string(hi) + "}";
      const Grammar g = compile_json_schema(ojson::parse(schema));
      for (int64_t v = -1100; v <= 1300; ++v)
        ASSERT_EQ(matches(g, std::to_string(v)), v >= lo && v <= hi) << schema << " on " << v;
      for (const char* bad : {"-0", "00", "01", "-01", "+1", "", "-"}) EXPECT_FALSE(matches(g, bad)) << schema << " " << bad;
    }
  check({R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10.5})", {"1", "10"}, {"0", "11", "-1"}});
  check({R"({"type": "integer", "minimum": 2.5})", {"3", "123456789012345"}, {"2", "-3"}});
  check({R"({"type": "integer", "maximum": -5})", {"-5", "-9999999999999999"}, {"-4", "0", "5"}});
  check({R"({"type": "integer", "minimum": 5, "exclusiveMinimum": true})", {"6"}, {"5"}});  // draft 4
}

TEST(Regex, Features) {
  auto g = [](const char* re) { return compile_regex(re); };
  EXPECT_TRUE(matches(g("a|bc*"), "bccc"));
  EXPECT_FALSE(matches(g("a|bc*"), "ab"));
  EXPECT_TRUE(matches(g("(?:ab){2,}x?"), "ababab"));
  EXPECT_TRUE(matches(g(R"(\d{3}-\w+\s?\.)"), "123-a_b."));
  EXPECT_FALSE(matches(g(R"(\d{3})"), "12a"));
  EXPECT_TRUE(matches(g(R"([^\d\s]+)"), "ab-é"));
  EXPECT_FALSE(matches(g(R"([^\d\s]+)"), "a b"));
  EXPECT_TRUE(matches(g(R"(\D\W\S)"), "a-b"));
  EXPECT_TRUE(matches(g("x{2}y{1,2}z{0,}"), "xxyyzzz"));
  EXPECT_TRUE(matches(g("a{,2}"), "a{,2}"));  // not a quantifier: literal braces
  EXPECT_TRUE(matches(g(".+?"), "é😀"));
  EXPECT_FALSE(matches(g("."), "\n"));
  EXPECT_TRUE(matches(g("(?<year>[0-9]{4})"), "2024"));
  EXPECT_THROW(g("(?=a)"), Error);
  EXPECT_THROW(g("a)"), Error);
  EXPECT_THROW(g("[a"), Error);
  EXPECT_THROW(g("*a"), Error);
}

}  // namespace
}  // namespace brisk::grammar
