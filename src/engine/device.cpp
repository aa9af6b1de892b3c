#include "engine/device.hpp"

#include "base/error.hpp"
#if BRISK_WITH_CUDA
#include "backend/cuda/cuda_backend.hpp"
#endif

namespace brisk {

bool built_with_cuda() {
#if BRISK_WITH_CUDA
  return true;
#else
  return false;
#endif
}

namespace {

std::unique_ptr<Backend> open_cuda(int index, bool exact) {
#if BRISK_WITH_CUDA
  return make_cuda_backend(index, exact);
#else
  (void)index, (void)exact;
  throw Error(ErrorCode::kUnsupported, "this brisk was built without CUDA (configure with -DBRISK_CUDA=ON)", "--device");
#endif
}

}  // namespace

std::unique_ptr<Backend> make_backend(const DeviceOptions& o, std::string* note) {
  const std::string& d = o.device;
  if (d == "cpu") return make_cpu_backend(o.threads, !o.exact);
  if (d == "cuda") return open_cuda(0, o.exact);
  if (d.rfind("cuda:", 0) == 0) {
    const std::string idx = d.substr(5);
    if (idx.empty() || idx.size() > 3 || idx.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorCode::kInvalidArgument, "bad device '" + d + "': expected cuda:N", "--device");
    return open_cuda(std::stoi(idx), o.exact);
  }
  if (d == "auto") {
#if BRISK_WITH_CUDA
    if (cuda_device_count() > 0) {
      try {
        return make_cuda_backend(0, o.exact);
      } catch (const Error& e) {
        if (note) *note = std::string("not using the GPU: ") + e.what();
      }
    }
#endif
    return make_cpu_backend(o.threads, !o.exact);
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown device '" + d + "': use cpu, cuda, cuda:N or auto", "--device");
}

}  // namespace brisk
