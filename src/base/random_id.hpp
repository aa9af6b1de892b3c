// Identifiers for API objects (chat completions, tool calls): a prefix and 24 random
// lowercase letters and digits, as OpenAI's look.
#pragma once

#include <string>

namespace brisk {

std::string random_id(const char* prefix);

}  // namespace brisk
