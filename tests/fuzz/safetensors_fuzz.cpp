// safetensors files from anywhere: the header (its size, JSON, dtypes, shapes and offsets).
#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "format/safetensors_reader.hpp"

using namespace brisk;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckpointIndex ckpt;
  ckpt.format = "safetensors";
  try {
    safetensors::read_safetensors(std::make_shared<MappedFile>("fuzz.safetensors", data, size), ckpt);
    ckpt.reindex();
  } catch (const Error&) {
  }
  return 0;
}
