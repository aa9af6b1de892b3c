// What the public LoadedModel holds: the backend and the model resident on it.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "brisk/brisk.hpp"
#include "model/model.hpp"

namespace brisk {

class LoadedModel {
 public:
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;  // declared after the backend: destroyed before it
  ModelInfo info;
};

}  // namespace brisk
