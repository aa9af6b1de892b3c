#include "server/structured_output.hpp"

#include <string>

#include "server/request_checks.hpp"

namespace brisk::server {
namespace {

using ojson = nlohmann::ordered_json;
using Kind = OutputConstraint::Kind;

// A schema given as an object (or, for guided_json, as JSON text).
std::string schema_text(const ojson& v, const char* field) {
  if (v.is_object() || v.is_boolean()) return v.dump();
  if (v.is_string()) return v.get<std::string>();
  bad_field(field, std::string("'") + field + "' must be a JSON Schema object");
}

OutputConstraint from_response_format(const ojson& rf) {
  OutputConstraint c;
  if (!rf.is_object()) bad_field("response_format", "'response_format' must be an object with a 'type'");
  const ojson* type = json_field(rf, "type");
  if (!type || !type->is_string()) bad_field("response_format", "'response_format' needs a 'type' string");
  const std::string t = type->get<std::string>();
  if (t == "text") return c;
  if (t == "json_object") {
    c.kind = Kind::JsonObject;
    return c;
  }
  if (t != "json_schema")
    bad_field("response_format", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"");
  const ojson* js = json_field(rf, "json_schema");
  if (!js || !js->is_object()) bad_field("response_format", "'response_format.json_schema' must be an object");
  const ojson* name = json_field(*js, "name");
  if (name && !name->is_string()) bad_field("response_format", "'response_format.json_schema.name' must be a string");
  const ojson* schema = json_field(*js, "schema");
  c.kind = Kind::JsonSchema;
  c.text = schema ? schema_text(*schema, "response_format") : "{}";
  const ojson* strict = json_field(*js, "strict");
  if (strict && !strict->is_boolean()) bad_field("response_format", "'response_format.json_schema.strict' must be true or false");
  c.strict = strict && strict->get<bool>();
  return c;
}

}  // namespace

OutputConstraint output_constraint(const ojson& body) {
  OutputConstraint c;
  int given = 0;
  auto take = [&](OutputConstraint next) {
    if (next.kind == Kind::None) return;
    if (++given > 1)
      bad_field("response_format", "give one of response_format, grammar, json_schema, guided_json, guided_regex "
                                   "and guided_choice");
    c = std::move(next);
  };
  if (const ojson* rf = json_field(body, "response_format")) take(from_response_format(*rf));
  for (const char* field : {"json_schema", "guided_json"})
    if (const ojson* v = json_field(body, field)) take(OutputConstraint::of(Kind::JsonSchema, schema_text(*v, field), false));
  if (const ojson* g = json_field(body, "grammar")) {
    if (!g->is_string()) bad_field("grammar", "'grammar' must be a GBNF grammar string");
    take(OutputConstraint::of(Kind::Gbnf, g->get<std::string>(), true));
  }
  if (const ojson* r = json_field(body, "guided_regex")) {
    if (!r->is_string()) bad_field("guided_regex", "'guided_regex' must be a string");
    take(OutputConstraint::of(Kind::Regex, r->get<std::string>(), true));
  }
  if (const ojson* ch = json_field(body, "guided_choice")) {
    if (!ch->is_array() || ch->empty()) bad_field("guided_choice", "'guided_choice' must be a non-empty list of strings");
    OutputConstraint choice = OutputConstraint::of(Kind::Choice, "");
    for (const ojson& s : *ch) {
      if (!s.is_string()) bad_field("guided_choice", "'guided_choice' must be a non-empty list of strings");
      choice.choices.push_back(s.get<std::string>());
    }
    take(std::move(choice));
  }
  return c;
}

}  // namespace brisk::server
