// brisk serve: the OpenAI-compatible server. It listens first (so /health can say
// "loading"), then loads the model and starts the engine. SIGINT or SIGTERM stops it
// gracefully: no new connections, running and queued requests are cancelled (each client
// gets an error chunk or body), and the process exits 0.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "brisk/brisk.hpp"
#include "cli/options.hpp"
#include "cli/stop_signals.hpp"
#include "cli/verbs.hpp"
#include "server/http_server.hpp"

namespace brisk::cli {
namespace {

// Beyond these a value is a typo: each slot and queue place costs two connection threads.
constexpr int kMaxParallel = 1024;
constexpr int kMaxQueue = 4096;

struct ServeOptions {
  std::string model;
  LoadOptions load;
  bool no_prefix_cache = false;
  server::ServerOptions http;
  EngineOptions engine;
};

int serve(ServeOptions& o) {
  if (o.model.empty()) o.model = default_model_path();
  // The engine thread does not select a device of its own yet, so it runs on the first GPU.
  if (o.load.device.rfind("cuda:", 0) == 0 && o.load.device != "cuda:0")
    throw Error(ErrorCode::kUnsupported, "brisk serve runs on cuda:0 (or the CPU) for now, not " + o.load.device, "--device");
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

  if (o.http.threads == 0) o.http.threads = std::max(32, 2 * (o.engine.parallel + int(o.engine.max_queue)) + 8);
  server::HttpServer http(o.http);
  std::string err;
  if (!http.bind(&err)) throw Error(ErrorCode::kIo, err);
  std::thread listener([&] { http.listen(); });
  std::fprintf(stderr, "brisk serve: listening on http://%s:%d (loading %s)\n", o.http.host.c_str(), http.port(),
               o.model.c_str());

  std::unique_ptr<Engine> engine;
  try {
    auto model = load_model(o.model, o.load);
    const ModelInfo info = model_info(*model);
    if (!info.device_note.empty()) std::fprintf(stderr, "%s\n", info.device_note.c_str());
    if (!info.template_note.empty()) std::fprintf(stderr, "brisk serve: %s\n", info.template_note.c_str());
    o.engine.prefix_cache = !o.no_prefix_cache;
    engine = std::make_unique<Engine>(model, o.engine);
  } catch (...) {
    http.stop();
    listener.join();
    throw;
  }
  stop_signals_ready();  // from now on a signal shuts down gracefully
  http.attach(*engine);
  const EngineOptions& eo = engine->options();
  const EngineStats st = engine->stats();
  std::fprintf(stderr,
               "brisk serve: ready: %s on %s, %d sequences of up to %lld positions, KV pool of %lld blocks x %d "
               "positions%s\n",
               o.http.model_name.c_str(), engine->model_info().backend.c_str(), eo.parallel,
               static_cast<long long>(eo.context), static_cast<long long>(st.kv_blocks_total), eo.kv_block_size,
               eo.prefix_cache ? ", prefix cache on" : "");

  wait_for_stop_signal();
  http.begin_stop();           // new requests and chat templates still rendering get a 503
  engine->shutdown(false);     // every request gets its end, so every connection finishes
  http.stop();
  listener.join();
  return 0;
}

}  // namespace

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  app.add_option("-m,--model", o->model, "GGUF file or HF directory (default: the model scripts/setup installed)");
  app.add_option("--host", o->http.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o->http.port, "port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--api-key", o->http.api_key, "require 'Authorization: Bearer KEY' on /v1/*");
  app.add_option("--model-name", o->http.model_name, "the model's name in the API (default: the file name)");
  app.add_option("--parallel", o->engine.parallel, "sequences decoded together")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxParallel));
  app.add_option("-c,--ctx", o->engine.context, "positions per sequence, prompt + output (default: min(4096, model))")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24));
  app.add_option("--kv-memory", o->engine.kv_memory, "bytes for the KV pool, e.g. 8GB (default: --ctx x --parallel)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--kv-blocks", o->engine.kv_blocks, "blocks in the KV pool (default: from --kv-memory, else --ctx x --parallel)")
      ->check(CLI::Range(int64_t(1), int64_t(INT32_MAX)));
  app.add_option("--kv-block", o->engine.kv_block_size, "positions per KV block (a power of two)")
      ->capture_default_str()
      ->check(power_of_two(kMaxKvBlockSize));
  app.add_flag("--no-prefix-cache", o->no_prefix_cache, "do not share KV blocks between prompts with a common prefix");
  app.add_option("--queue", o->engine.max_queue, "requests that may wait for a slot")
      ->capture_default_str()
      ->check(CLI::Range(size_t(0), size_t(kMaxQueue)));
  app.add_option("--prefill-chunk", o->engine.prefill_chunk, "prompt tokens per scheduler step (default: 2048 on a GPU, 256 on the CPU)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--prefill-seqs", o->engine.prefill_seqs, "prompts that may share a prefill pass (default: 64 on a GPU, 1 on the CPU)")
      ->check(CLI::Range(1, kMaxParallel));
  app.add_option("--trace-steps", o->engine.trace_path, "write one JSON line per scheduler step to this file");
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
  add_device_option(app, o->load.device, "cpu, cuda, cuda:N or auto");
  add_threads_option(app, o->load.threads);
  add_chat_template_option(app, o->load.chat_template);
  add_cuda_tuning_options(app, o->load);
  app.add_flag("--exact", o->load.exact, "float32 everywhere (the oracle)");
  return [o]() { return serve(*o); };
}

}  // namespace brisk::cli
