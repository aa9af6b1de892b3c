#include "cli/options.hpp"

#include <filesystem>

#include "brisk/brisk.hpp"

namespace brisk::cli {

CLI::Validator above(double low, double high) {
  return CLI::Validator(
      [low, high](std::string& v) -> std::string {
        double x = 0;
        if (CLI::detail::lexical_cast(v, x) && x > low && x <= high) return "";
        return "Value " + v + " not in range (" + CLI::detail::to_string(low) + ", " + CLI::detail::to_string(high) + "]";
      },
      "NUMBER");
}

CLI::Validator power_of_two(int64_t max) {
  return CLI::Validator(
      [max](std::string& v) -> std::string {
        int64_t x = 0;
        if (CLI::detail::lexical_cast(v, x) && x >= 1 && x <= max && (x & (x - 1)) == 0) return "";
        return "Value " + v + " is not a power of two from 1 to " + std::to_string(max);
      },
      "POWER OF 2");
}

CLI::Option* add_threads_option(CLI::App& app, int& threads) {
  return app.add_option("-t,--threads", threads, "CPU threads (default: one per core)")
      ->check(CLI::Range(1, kMaxThreads));
}

CLI::Option* add_device_option(CLI::App& app, std::string& device, const char* help) {
  return app.add_option("--device", device, help)->capture_default_str()->check(CLI::Validator(
      [](std::string& d) -> std::string {
        if (d == "cpu" || d == "cuda" || d == "auto") return "";
        const std::string n = d.rfind("cuda:", 0) == 0 ? d.substr(5) : "";
        if (!n.empty() && n.size() <= 3 && n.find_first_not_of("0123456789") == std::string::npos) return "";
        return "unknown device '" + d + "': use cpu, cuda, cuda:N or auto";
      },
      "DEVICE"));
}

CLI::Option* add_chat_template_option(CLI::App& app, std::string& value) {
  std::string help = "chat template: a Jinja file (or a tokenizer_config.json), or a built-in:";
  std::string names;
  for (const auto& [name, format] : chat_template_names()) {
    help += "\n  " + name + ": " + format;
    names += (names.empty() ? "" : ", ") + name;
  }
  help += "\n(default: the model's own, else its architecture's built-in, with a warning)";
  return app.add_option("--chat-template", value, help)->check(CLI::Validator(
      [names](std::string& v) -> std::string {
        for (const auto& [name, format] : chat_template_names())
          if (v == name) return "";
        if (std::filesystem::is_regular_file(v)) return "";
        return "'" + v + "' is neither a file nor a built-in chat template (" + names + ")";
      },
      "FILE|NAME"));
}

CLI::Option* add_cuda_tuning_options(CLI::App& app, LoadOptions& load) {
  app.add_flag("--no-pdl", [&load](int64_t) { load.pdl = false; },
               "CUDA: no programmatic dependent launch (to measure what it buys)");
  app.add_flag("--no-mmq", [&load](int64_t) { load.mmq = false; },
               "CUDA: quantized batches dequantize to bf16 instead of using the int8 or FP8 tensor cores (to compare)");
  return app.add_option("--decode-attention", load.decode_attention,
                        "CUDA: auto, or float to keep decode attention on the float kernel")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float"}));
}

}  // namespace brisk::cli
