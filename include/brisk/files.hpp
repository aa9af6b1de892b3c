// Checkpoint files without running them: what one holds, and a GGUF file's matrices rewritten
// in another weight format (brisk inspect and brisk quantize are these and their options).
#pragma once

#include <cstdio>
#include <string>

namespace brisk {

// Prints a checkpoint's architecture, shapes and tensors (and, with all_metadata, every
// metadata key) to out. Throws brisk::Error for a file brisk cannot read.
void print_checkpoint(const std::string& path, bool all_metadata, std::FILE* out);

struct QuantizeRequest {
  std::string in, out;  // GGUF files
  std::string type;     // a weight type: i8, fp8, q8_0, q4_k, q6_k, q5_k, q5_0, q4_0, bf16, f16, ...
  int threads = 0;      // 0: every core
};

struct QuantizeResult {
  int converted = 0;  // matrices written in the new type
  int kept = 0;       // tensors copied as they were
  std::string type;   // the type's canonical name
};

// Rewrites in's matrices as type into out (vectors, matrices that already carry scales and
// rows that are not whole blocks of the type stay as they are; metadata is copied). Each
// matrix is converted as it is written, so a large model never sits in memory whole.
QuantizeResult quantize_file(const QuantizeRequest& request);

// Whether a name is a weight type quantize_file accepts.
bool is_weight_type(const std::string& name);

}  // namespace brisk
