#include "backend/factory.hpp"

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

#if !BRISK_WITH_CUDA
int cuda_device_count() { return 0; }
#endif

namespace {

std::unique_ptr<Backend> open_cuda(int index, const BackendOptions& o) {
#if BRISK_WITH_CUDA
  CudaOptions c;
  c.exact = o.exact;
  c.float_decode_attention = o.decode_attention == "float";
  c.pdl = o.pdl;
  c.mmq = o.mmq;
  return make_cuda_backend(index, c);
#else
  (void)index, (void)o;
  throw Error(ErrorCode::kUnsupported, "this brisk was built without CUDA (configure with -DBRISK_CUDA=ON)", "--device");
#endif
}

}  // namespace

std::unique_ptr<Backend> make_backend(const BackendOptions& o, std::string* note) {
  if (o.decode_attention != "auto" && o.decode_attention != "float")
    throw Error(ErrorCode::kInvalidArgument, "decode attention must be auto or float, not '" + o.decode_attention + "'",
                "--decode-attention");
  const std::string& d = o.device;
  if (d == "cpu") return make_cpu_backend(o.threads, !o.exact);
  if (d == "cuda") return open_cuda(0, o);
  if (d.rfind("cuda:", 0) == 0) {
    const std::string idx = d.substr(5);
    if (idx.empty() || idx.size() > 3 || idx.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorCode::kInvalidArgument, "bad device '" + d + "': expected cuda:N", "--device");
    return open_cuda(std::stoi(idx), o);
  }
  if (d == "auto") {
    if (cuda_device_count() > 0) {
      try {
        return open_cuda(0, o);
      } catch (const Error& e) {
        if (note) *note = std::string("not using the GPU: ") + e.what();
      }
    }
    return make_cpu_backend(o.threads, !o.exact);
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown device '" + d + "': use cpu, cuda, cuda:N or auto", "--device");
}

}  // namespace brisk
