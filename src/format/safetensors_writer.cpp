// safetensors serializer: 8-byte LE header length, JSON header (nlohmann), then the bytes.
#include "format/safetensors_writer.hpp"

#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "format/safetensors_reader.hpp"

namespace brisk {

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::string what = "safetensors tensor '" + t.name + "'";
    if (t.name.empty() || t.name == "__metadata__")
      throw Error(ErrorCode::kInvalidArgument, "bad safetensors tensor name '" + t.name + "'");
    if (!names.insert(t.name).second) throw Error(ErrorCode::kInvalidArgument, "duplicate " + what);
    const char* dt = safetensors::safetensors_dtype_name(t.dtype);
    uint64_t numel = 1;
    for (int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(numel, uint64_t(d), &numel))
        throw Error(ErrorCode::kInvalidArgument, what + " has a negative or overflowing dim");
    std::optional<uint64_t> nb = dtype_bytes(t.dtype, numel);
    if (!nb || *nb != t.bytes.size())
      throw Error(ErrorCode::kInvalidArgument,
                  what + " has " + std::to_string(t.bytes.size()) + " bytes, expected " +
                      (nb ? std::to_string(*nb) : std::string("(overflow)")));
    header[t.name] = {{"dtype", dt}, {"shape", t.shape}, {"data_offsets", {offset, offset + *nb}}};
    offset += *nb;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned

  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::kIo, "cannot create", tmp);
    uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), std::streamsize(text.size()));
    for (const auto& t : tensors)
      out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
    if (!out.flush()) throw Error(ErrorCode::kIo, "write failed", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, "cannot rename into place", path);
  }
}

}  // namespace brisk
