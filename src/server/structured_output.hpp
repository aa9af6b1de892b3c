// The structured-output fields of a request as an OutputConstraint: OpenAI's response_format
// ({"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema",
// "strict"}}), llama.cpp's `grammar` (GBNF) and `json_schema`, and vLLM's `guided_json`,
// `guided_regex` and `guided_choice`. At most one may be given. The constraint is compiled
// when the engine takes the request; its errors are 400s too.
#pragma once

#include <nlohmann/json.hpp>

#include "brisk/types.hpp"

namespace brisk::server {

OutputConstraint output_constraint(const nlohmann::ordered_json& body);

}  // namespace brisk::server
