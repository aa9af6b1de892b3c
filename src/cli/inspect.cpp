// brisk inspect: what a checkpoint holds, without running it (brisk::print_checkpoint).
#include <cstdio>
#include <memory>

#include "brisk/files.hpp"
#include "cli/verbs.hpp"

namespace brisk::cli {

Action add_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  app.add_option("model", *path, "GGUF file or HF directory")->required();
  app.add_flag("--all-metadata", *all, "print every metadata key (long arrays summarised)");
  return [=]() {
    print_checkpoint(*path, *all, stdout);
    return 0;
  };
}

}  // namespace brisk::cli
