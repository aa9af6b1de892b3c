// brisk serve: the OpenAI-compatible server. It listens first (so /health can say
// "loading"), then loads the model and starts the scheduler. SIGINT or SIGTERM stops it
// gracefully: no new connections, running and queued requests are cancelled (each client
// gets an error chunk or body), and the process exits 0.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/error.hpp"
#include "cli/options.hpp"
#include "cli/stop_signals.hpp"
#include "cli/verbs.hpp"
#include "engine/device.hpp"
#include "engine/scheduler.hpp"
#include "server/http_server.hpp"

namespace brisk::cli {
namespace {

// Beyond these a value is a typo: each slot and queue place costs two connection threads.
constexpr int kMaxParallel = 1024;
constexpr int kMaxQueue = 4096;

struct ServeOptions {
  std::string model;
  std::string device = "auto";
  int threads = 0;
  bool exact = false;
  uint64_t kv_memory = 0;  // bytes for the KV pool; 0: --ctx x --parallel
  bool no_prefix_cache = false;
  std::string chat_template;  // --chat-template
  server::ServerOptions http;
  SchedulerOptions sched;
};

int serve(ServeOptions& o) {
  if (o.model.empty()) o.model = default_model_path();
  // The engine thread does not select a device of its own yet, so it runs on the first GPU.
  if (o.device.rfind("cuda:", 0) == 0 && o.device != "cuda:0")
    throw Error(ErrorCode::kUnsupported, "brisk serve runs on cuda:0 (or the CPU) for now, not " + o.device, "--device");
  if (o.http.model_name.empty()) o.http.model_name = std::filesystem::path(o.model).filename().string();
  // Signals go to one thread that waits for them (from now on, so that one during the load
  // stops it); a dead client's socket must not kill us.
  start_stop_signal_thread();
  signal(SIGPIPE, SIG_IGN);
  // Each forwarded request holds two descriptors at the gate, plus one in the server behind.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    o.http.max_connections = std::min<size_t>(o.http.max_connections, size_t(files.rlim_cur / 3));

  if (o.http.threads == 0) o.http.threads = std::max(32, 2 * (o.sched.parallel + int(o.sched.max_queue)) + 8);
  server::HttpServer http(o.http);
  std::string err;
  if (!http.bind(&err)) throw Error(ErrorCode::kIo, err);
  std::thread listener([&] { http.listen(); });
  std::fprintf(stderr, "brisk serve: listening on http://%s:%d (loading %s)\n", o.http.host.c_str(), http.port(),
               o.model.c_str());

  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Scheduler> scheduler;
  try {
    std::string note;
    backend = make_backend(DeviceOptions{o.device, o.threads, o.exact}, &note);
    if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
    LoadOptions lo;
    lo.chat_template = o.chat_template;
    model = Model::load(o.model, *backend, lo);
    if (!model->chat_template_note().empty()) std::fprintf(stderr, "brisk serve: %s\n", model->chat_template_note().c_str());
    if (o.sched.context == 0) o.sched.context = std::min<int64_t>(model->hparams().context, 4096);
    // A GPU prefills thousands of tokens in the time of a few decode steps; a CPU does not.
    const bool gpu = backend->name().rfind("cuda", 0) == 0;
    if (o.sched.prefill_chunk == 0) o.sched.prefill_chunk = gpu ? 2048 : 256;
    // Several prompts per prefill pass on a GPU (a burst of arrivals gets its first tokens in
    // one pass); one on the CPU, where a pass of another length may round differently.
    if (o.sched.prefill_seqs == 0) o.sched.prefill_seqs = gpu ? 64 : 1;
    // A GPU's first steps choose algorithms and capture graphs: done before "ready".
    o.sched.warm_up = gpu;
    if (o.kv_memory > 0) {
      const HParams& hp = model->hparams();
      const uint64_t block_bytes = 2ull * uint64_t(backend->kv_elem_bytes()) * uint64_t(hp.n_layers) *
                                   uint64_t(hp.n_kv_heads) * uint64_t(hp.head_dim) * uint64_t(o.sched.block_size);
      o.sched.kv_blocks = int64_t(o.kv_memory / block_bytes);
      if (o.sched.kv_blocks < 1)
        throw Error(ErrorCode::kInvalidArgument,
                    "--kv-memory is smaller than one KV block (" + std::to_string(block_bytes) + " bytes)", "--kv-memory");
    }
    o.sched.prefix_cache = !o.no_prefix_cache;
    scheduler = std::make_unique<Scheduler>(*model, o.sched);
  } catch (...) {
    http.stop();
    listener.join();
    throw;
  }
  stop_signals_ready();  // from now on a signal shuts down gracefully
  http.attach(*model, *scheduler);
  const SchedulerStats st = scheduler->stats();
  std::fprintf(stderr,
               "brisk serve: ready: %s on %s, %d sequences of up to %lld positions, KV pool of %lld blocks x %d "
               "positions%s\n",
               o.http.model_name.c_str(), backend->name().c_str(), o.sched.parallel,
               static_cast<long long>(o.sched.context), static_cast<long long>(st.kv_blocks_total), o.sched.block_size,
               o.sched.prefix_cache ? ", prefix cache on" : "");

  wait_for_stop_signal();
  http.begin_stop();           // new requests and chat templates still rendering get a 503
  scheduler->shutdown(false);  // every request gets its end, so every connection finishes
  http.stop();
  listener.join();
  return 0;
}

}  // namespace

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  o->sched.context = 0;
  o->sched.prefill_chunk = 0;
  o->sched.prefill_seqs = 0;
  app.add_option("-m,--model", o->model, "GGUF file or HF directory (default: the model scripts/setup installed)");
  app.add_option("--host", o->http.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o->http.port, "port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--api-key", o->http.api_key, "require 'Authorization: Bearer KEY' on /v1/*");
  app.add_option("--model-name", o->http.model_name, "the model's name in the API (default: the file name)");
  app.add_option("--parallel", o->sched.parallel, "sequences decoded together")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxParallel));
  app.add_option("-c,--ctx", o->sched.context, "positions per sequence, prompt + output (default: min(4096, model))")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24));
  app.add_option("--kv-memory", o->kv_memory, "bytes for the KV pool, e.g. 8GB (default: --ctx x --parallel)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--kv-block", o->sched.block_size, "positions per KV block (a power of two)")
      ->capture_default_str()
      ->check(power_of_two(1 << 16));
  app.add_flag("--no-prefix-cache", o->no_prefix_cache, "do not share KV blocks between prompts with a common prefix");
  app.add_option("--queue", o->sched.max_queue, "requests that may wait for a slot")
      ->capture_default_str()
      ->check(CLI::Range(size_t(0), size_t(kMaxQueue)));
  app.add_option("--prefill-chunk", o->sched.prefill_chunk, "prompt tokens per scheduler step (default: 2048 on a GPU, 256 on the CPU)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--prefill-seqs", o->sched.prefill_seqs, "prompts that may share a prefill pass (default: 64 on a GPU, 1 on the CPU)")
      ->check(CLI::Range(1, kMaxParallel));
  app.add_option("--trace-steps", o->sched.trace_path, "write one JSON line per scheduler step to this file");
  app.add_option("--max-body", o->http.max_body_bytes, "largest request body in bytes")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1), size_t(1) << 30));
  app.add_option("--max-connections", o->http.max_connections, "open client connections at most (more get a 503)")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1), size_t(1) << 20));
  app.add_option("--request-timeout", o->http.request_seconds, "seconds a client has to send a whole request")
      ->capture_default_str()
      ->check(CLI::Range(1, 24 * 3600));
  app.add_option("--cors", o->http.cors_origin, "let web pages from this origin (or *) call the API (CORS; off by default)");
  app.add_option("--http-threads", o->http.threads, "connection threads (0: enough for every slot and queue place)")
      ->check(CLI::Range(0, 1 << 14));
  add_device_option(app, o->device, "cpu, cuda, cuda:N or auto");
  add_threads_option(app, o->threads);
  add_chat_template_option(app, o->chat_template);
  app.add_flag("--exact", o->exact, "float32 everywhere (the oracle)");
  return [o]() { return serve(*o); };
}

}  // namespace brisk::cli
