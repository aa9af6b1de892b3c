#include "backend/factory.hpp"

#include <thread>

#include "base/error.hpp"
#include "brisk/brisk.hpp"
#include "quant/cpu_isa.hpp"
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

std::string built_cuda_archs() {
#ifdef BRISK_CUDA_ARCH_LIST
  return BRISK_CUDA_ARCH_LIST;
#else
  return "";
#endif
}

DeviceReport device_report() {
  DeviceReport r;
  r.built_with_cuda = built_with_cuda();
  r.cuda_archs = built_cuda_archs();
  r.cpu_isa = quant::cpu_isa_name();
  r.cpu_threads = int(std::thread::hardware_concurrency());
#if BRISK_WITH_CUDA
  const CudaDevices d = cuda_devices();
  r.cuda_runtime_version = d.runtime_version;
  r.driver_version = d.driver_version;
  r.cuda_note = d.note;
  for (size_t i = 0; i < d.gpus.size(); ++i) {
    const CudaDevices::Gpu& g = d.gpus[i];
    r.gpus.push_back(GpuInfo{int(i), g.name, g.compute_capability, g.memory_bytes, g.has_code});
  }
#else
  r.cuda_note = "this brisk was built without CUDA";
#endif
  return r;
}

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
