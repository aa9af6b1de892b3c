// The engine's Error is the public one (include/brisk/error.hpp), so a caller of the API
// catches exactly what the engine throws.
#pragma once

#include "brisk/error.hpp"
