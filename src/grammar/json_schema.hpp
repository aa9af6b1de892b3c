// JSON Schema as a grammar (response_format json_schema, tool parameters): types, properties
// with required and optional ones in their declared order, additionalProperties (false by
// default in strict mode), items / prefixItems / minItems / maxItems, enum and const,
// anyOf / oneOf (as alternatives), a one-element allOf, $ref into $defs / definitions
// (recursion included), string minLength / maxLength / pattern (regex.hpp) / format (date,
// time, date-time, uuid, email, ipv4, uri). Annotations (title, description, default,
// examples, ...) are ignored; any other keyword is an error that names it, so a request
// never silently gets a weaker constraint than it asked for.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "grammar/grammar.hpp"

namespace brisk::grammar {

struct JsonSchemaOptions {
  bool strict = true;  // additionalProperties defaults to false
  // Each JSON text written between `before` and `after` (no space around it), 1..max_count
  // of them separated by `between` (tool calls in a chat template's syntax). Unset (empty
  // and max_count 1): the JSON text alone, with space after it allowed.
  std::string before, after, between;
  int max_count = 1;  // < 0: unbounded
};

// The schema as parsed with its key order (properties are written in declared order).
Grammar compile_json_schema(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});
Grammar compile_json_object();  // any JSON object (response_format json_object)

}  // namespace brisk::grammar
