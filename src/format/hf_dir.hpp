// Hugging Face model directories: config.json plus model.safetensors or a sharded
// model.safetensors.index.json, and the optional generation / tokenizer files beside them.
#pragma once

#include <memory>
#include <string>

#include "format/checkpoint.hpp"

namespace brisk {

// Opens a directory as format "hf". Throws Error naming the file that is missing or malformed.
std::unique_ptr<CheckpointIndex> open_hf_dir(const std::string& dir);

// True when `name` is a plain file name inside the directory (no '/', '\', "..", NUL).
bool is_safe_shard_name(const std::string& name);

}  // namespace brisk
