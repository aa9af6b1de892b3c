// GGUF files from anywhere: the reader, then what the model layer reads from the metadata
// (hyperparameters, tensor roles, the tokenizer, the chat template).
#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "format/gguf_reader.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "template/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace brisk;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckpointIndex ckpt;
  ckpt.format = "gguf";
  try {
    gguf::read_gguf(std::make_shared<MappedFile>("fuzz.gguf", data, size), ckpt);
    ckpt.reindex();
  } catch (const Error&) {
    return 0;
  }
  try {
    const HParams hp = hparams_from_checkpoint(ckpt);
    map_weights(ckpt, hp);
  } catch (const Error&) {
  }
  try {
    auto tok = load_tokenizer_gguf(ckpt);
    const auto ids = tok->encode("Hello <|im_end|> wörld 🙂 \xff", true, true);
    tok->decode(ids);
  } catch (const Error&) {
  }
  try {
    if (auto source = find_chat_template(ckpt))
      ChatTemplate(*source).render(nlohmann::ordered_json::parse(R"([{"role":"user","content":"hi"}])"), true);
  } catch (const Error&) {
  }
  return 0;
}
