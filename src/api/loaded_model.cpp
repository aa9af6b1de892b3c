// load_model: the backend from the options (backend/factory), then the model onto it.
#include "api/loaded_model.hpp"

#include "backend/factory.hpp"
#include "engine/score.hpp"
#include "template/builtin_templates.hpp"

namespace brisk {
namespace {

ModelInfo describe(const std::string& path, const Backend& be, Model& m) {
  const HParams& hp = m.hparams();
  ModelInfo i;
  i.path = path;
  i.architecture = hp.arch_name;
  i.backend = be.name();
  i.vocab = hp.vocab, i.hidden = hp.hidden, i.layers = hp.n_layers, i.heads = hp.n_heads;
  i.kv_heads = hp.n_kv_heads, i.head_dim = hp.head_dim, i.context = hp.context;
  i.sliding_window = hp.sliding_window;
  i.layer_sliding = hp.layer_sliding;
  i.weight_bytes = m.weight_bytes();
  Transformer& tf = m.transformer();
  i.matmul_weight_bytes = tf.matmul_weight_bytes();
  i.layer_matmul_params = tf.layer_matmul_params();
  i.kv_elem_bytes = be.kv_elem_bytes();
  i.has_tokenizer = m.has_tokenizer();
  i.has_own_chat_template = m.has_own_chat_template();
  return i;
}

}  // namespace

std::shared_ptr<LoadedModel> load_model(const std::string& path, const LoadOptions& o) {
  auto lm = std::make_shared<LoadedModel>();
  std::string note;
  lm->backend = make_backend(BackendOptions{o.device, o.threads, o.exact, o.decode_attention, o.pdl, o.mmq}, &note);
  ModelLoadOptions mo;
  mo.progress = o.progress;
  mo.chat_template = o.chat_template;
  mo.load_tokenizer = o.tokenizer;
  lm->model = Model::load(path, *lm->backend, mo);
  lm->info = describe(path, *lm->backend, *lm->model);
  lm->info.device_note = note;
  lm->info.template_note = lm->model->chat_template_note();
  return lm;
}

ModelInfo model_info(const LoadedModel& model) { return model.info; }

DeviceCeilings measure_ceilings(LoadedModel& model) {
  return DeviceCeilings{model.backend->measure_bandwidth(), model.backend->measure_matmul_rate()};
}

uint64_t memory_peak(const LoadedModel& model) { return model.backend->memory_peak(); }

std::vector<float> score(LoadedModel& model, const std::vector<int32_t>& tokens) {
  return score_tokens(*model.model, tokens);
}

std::vector<std::pair<std::string, std::string>> chat_template_names() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const BuiltinChatTemplate& t : builtin_chat_templates()) out.emplace_back(t.name, t.format);
  return out;
}

}  // namespace brisk
