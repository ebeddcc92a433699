#include "backend/cuda/cuda_backend.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/matmul.h"
#include "backend/cpu/quant_formats.h"
#include "backend/device.h"
#include "backend/cuda/env_switch.h"
#include "backend/cuda/pick_rows.cuh"
#include "backend/cuda/attention.cuh"
#include "backend/cuda/device_caps.h"
#include "backend/cuda/elem.h"
#include "backend/cuda/elementwise.cuh"
#include "backend/cuda/dequantize.cuh"
#include "backend/cuda/embedding.cuh"
#include "backend/cuda/encoder_attention.cuh"
#include "backend/cuda/gated_activation.cuh"
#include "backend/cuda/layer_norm.cuh"
#include "backend/cuda/graph_cache.h"
#include "backend/cuda/lt_gemm.h"
#include "backend/cuda/matmul.cuh"
#include "backend/cuda/matmul_int8.cuh"
#include "backend/cuda/matmul_mma.cuh"
#include "backend/cuda/matmul_tc.cuh"
#include "backend/cuda/prompt_attention.cuh"
#include "backend/cuda/moe.cuh"
#include "backend/cuda/rms_norm.cuh"
#include "backend/cuda/rope.cuh"
#include "backend/cuda/split_bf16.cuh"
#include "backend/cuda/store_kv.cuh"

namespace llmhost {

namespace {

cudaStream_t S(void* s) { return static_cast<cudaStream_t>(s); }

std::string CudaError(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// The driver's virtual memory calls, found through the runtime (no link
// against libcuda: the binary starts, and reports, where there is no driver).
struct Vmm {
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  bool ok() const { return reserve && address_free && create && release && map && unmap && set_access && granularity; }
};

template <typename F>
void Resolve(const char* name, F* fn) {
  cudaDriverEntryPointQueryResult q;
  void* p = nullptr;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
      q == cudaDriverEntryPointSuccess) {
    *fn = reinterpret_cast<F>(p);
  }
}

const Vmm& Driver() {
  static const Vmm v = [] {
    Vmm d;
    Resolve("cuMemAddressReserve", &d.reserve);
    Resolve("cuMemAddressFree", &d.address_free);
    Resolve("cuMemCreate", &d.create);
    Resolve("cuMemRelease", &d.release);
    Resolve("cuMemMap", &d.map);
    Resolve("cuMemUnmap", &d.unmap);
    Resolve("cuMemSetAccess", &d.set_access);
    Resolve("cuMemGetAllocationGranularity", &d.granularity);
    return d;
  }();
  return v;
}

CUmemAllocationProp DeviceProp(int device) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// How the device keeps `w`: in its stored format where the kernels read it
// (false: expanded to exact f32 rows at upload).
bool KeptAsStored(const WeightMatrix& w, cuda::WFmt* f) {
  using cuda::WFmt;
  switch (w.format) {
    case WeightFormat::kF32: *f = WFmt::kF32; return true;
    case WeightFormat::kF16: *f = WFmt::kF16; return true;
    case WeightFormat::kBF16: *f = WFmt::kBF16; return true;
    case WeightFormat::kMlxAffine: *f = WFmt::kMlx; return true;
    case WeightFormat::kFp8E4M3: *f = WFmt::kFp8; return true;
    case WeightFormat::kGgml:
      if (!CudaReadsGgmlInPlace(w.ggml_type)) return false;
      switch (w.ggml_type) {
        case GgmlType::kF32: *f = WFmt::kF32; return true;
        case GgmlType::kF16: *f = WFmt::kF16; return true;
        case GgmlType::kBF16: *f = WFmt::kBF16; return true;
        case GgmlType::kQ8_0: *f = WFmt::kQ8_0; return true;
        case GgmlType::kQ4_0: *f = WFmt::kQ4_0; return true;
        case GgmlType::kQ4_K: *f = WFmt::kQ4_K; return true;
        case GgmlType::kQ6_K: *f = WFmt::kQ6_K; return true;
        default: return false;
      }
  }
  return false;
}

// The kernels' view of a weight this backend prepared.
bool DevWeightOf(const WeightMatrix& w, cuda::DevWeight* d) {
  if (!KeptAsStored(w, &d->fmt)) return false;
  d->data = w.data;
  d->rows = w.rows;
  d->cols = w.cols;
  if (w.format == WeightFormat::kMlxAffine || w.format == WeightFormat::kFp8E4M3) {
    d->scales = w.scales;
    d->biases = w.biases;
    d->scale_type = cuda::ElemOf(w.scale_dtype);
    d->bits = w.bits;
    d->group_size = w.group_size;
  }
  d->row_bytes = quant::RowBytes(w);
  d->col_order = w.col_order;
  return true;
}

constexpr size_t kAlign = 256;
size_t Aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Result<std::unique_ptr<CudaBackend>> CudaBackend::Create(int device, Precision precision) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::NotSupported("cuda: no usable GPU (" + CudaError(e) + ")");
  }
  if (device < 0 || device >= count) {
    return Status::NotSupported("cuda: device " + std::to_string(device) + " does not exist (" +
                               std::to_string(count) + " GPU(s) found)");
  }
  if (!Driver().ok()) return Status::NotSupported("cuda: the driver lacks the virtual memory API (CUDA 12+ needed)");
  std::unique_ptr<CudaBackend> b(new CudaBackend(device, precision));
  b->Use();
  cudaStream_t s = nullptr;
  if (cudaError_t se = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); se != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::NotSupported("cuda: cannot create a stream on device " + std::to_string(device) + " (" +
                               CudaError(se) + ")");
  }
  b->stream_ = s;
  cuda::HopperOrNewer();  // read now, outside any graph capture (launches consult it)
  b->lt_ = cuda::LtGemm::Create();  // null without libcublasLt: own kernels only
  if (b->lt_) {
    auto ws = b->Allocate(cuda::LtGemm::kWorkspaceBytes, "cuBLASLt workspace");
    if (!ws.ok()) return ws.status();
    b->lt_workspace_ = *ws;
  }
  // Decode steps are a few hundred small launches: replayed as graphs
  // (LLMHOST_CUDA_GRAPHS=off runs them as plain launches, to compare).
  const char* graphs = std::getenv("LLMHOST_CUDA_GRAPHS");
  if (!graphs || std::string(graphs) != "off") b->graphs_ = std::make_unique<cuda::GraphCache>(64);
  CUmemAllocationProp prop = DeviceProp(device);
  size_t g = 0;
  if (Driver().granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS && g > 0) b->granularity_ = g;
  return b;
}

CudaBackend::CudaBackend(int device, Precision precision) : device_(device), precision_(precision) {}

CudaBackend::~CudaBackend() {
  Use();
  if (moe_table_.valid()) Free(moe_table_);
  if (tc_scratch_.valid()) Free(tc_scratch_);
  if (attn_scratch_.valid()) Free(attn_scratch_);
  if (order_scratch_.valid()) Free(order_scratch_);
  if (int8_scratch_.valid()) Free(int8_scratch_);
  if (widened_.valid()) Free(widened_);
  if (stacked_y_.valid()) Free(stacked_y_);
  if (lt_workspace_.valid()) Free(lt_workspace_);
  if (side_workspace_.valid()) Free(side_workspace_);  // the stream waits for the side stream's work
  graphs_.reset();
  if (stream_) {
    cudaStreamSynchronize(S(stream_));  // after the side stream's work too: it waits for it
    cudaStreamDestroy(S(stream_));
  }
  if (side_stream_) {
    cudaStreamDestroy(S(side_stream_));
    cudaEventDestroy(static_cast<cudaEvent_t>(fork_event_));
    cudaEventDestroy(static_cast<cudaEvent_t>(join_event_));
  }
}

void CudaBackend::Use() const { cudaSetDevice(device_); }

void CudaBackend::Fail(Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sticky_.ok()) sticky_ = std::move(s);
}

void CudaBackend::CheckLaunch(const char* op) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return;
  OpFailed(Status::Internal(std::string("cuda ") + op + ": " + CudaError(e)));
}

void CudaBackend::OpFailed(Status s) {
  if (capturing_) {  // the recording is dropped and the step run as plain launches
    if (capture_error_.ok()) capture_error_ = std::move(s);
    return;
  }
  Fail(std::move(s));
}

// ---- device graphs -----------------------------------------------------------

std::unique_lock<std::mutex> CudaBackend::WaitForRecording() {
  if (capture_thread_.load() == std::this_thread::get_id()) return std::unique_lock<std::mutex>(capture_mu_, std::defer_lock);
  return std::unique_lock<std::mutex>(capture_mu_);
}

void CudaBackend::Enqueue(uint64_t key, const std::function<void()>& ops) {
  if (key == 0 || !graphs_ || capturing_) {
    ops();
    return;
  }
  Use();
  switch (graphs_->Next(key, generation_)) {
    case cuda::GraphCache::Action::kRun:
      ops();
      return;
    case cuda::GraphCache::Action::kReplay:
      if (cudaError_t e = graphs_->Replay(key, S(stream_)); e != cudaSuccess) {
        Fail(Status::Internal("cuda graph launch: " + CudaError(e)));
      }
      return;
    case cuda::GraphCache::Action::kRecord:
      break;
  }
  const uint64_t generation = generation_;
  capture_error_ = Status::OK();
  std::unique_lock<std::mutex> recording(capture_mu_);
  capture_thread_.store(std::this_thread::get_id());
  if (cudaStreamBeginCapture(S(stream_), cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    capture_thread_.store(std::thread::id());
    recording.unlock();
    graphs_->Refuse(key);
    ops();
    return;
  }
  capturing_ = true;
  ops();
  capturing_ = false;
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(S(stream_), &g);
  capture_thread_.store(std::thread::id());
  recording.unlock();
  const bool usable = e == cudaSuccess && g && capture_error_.ok() && generation == generation_;
  if (e != cudaSuccess) (void)cudaGetLastError();
  bool kept = usable && graphs_->Keep(key, generation_, g);
  if (g) cudaGraphDestroy(g);
  if (kept && graphs_->Replay(key, S(stream_)) == cudaSuccess) return;
  // Nothing ran while recording: run the step now, and never record it again.
  (void)cudaGetLastError();
  graphs_->Refuse(key);
  ops();
}

uint64_t CudaBackend::graph_replays() const { return graphs_ ? graphs_->replays() : 0; }

void CudaBackend::DropGraphs() {
  auto recording = WaitForRecording();
  Use();
  ++generation_;
  if (graphs_) graphs_->Clear();
}

Status CudaBackend::CheckWeight(const WeightMatrix& w) const { return llmhost::CheckWeight(w); }

// ---- memory ---------------------------------------------------------------

Result<DeviceBuffer> CudaBackend::Allocate(size_t bytes, const std::string& tag) {
  Use();
  const size_t n = std::max<size_t>(bytes, 1);
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, n); e != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky
    const auto [free_b, total_b] = device_memory_info();
    return Status::ResourceExhausted(name() + ": allocating " + std::to_string(bytes) + " bytes for " + tag +
                                     " failed (" + CudaError(e) + "; " + std::to_string(free_b >> 20) +
                                     " of " + std::to_string(total_b >> 20) + " MiB free)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  live_[id] = Live{Kind::kDevice, n, 0, {}};
  stats_.bytes_in_use += n;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_in_use);
  ++stats_.buffer_count;
  return DeviceBuffer{p, bytes, id};
}

Result<DeviceBuffer> CudaBackend::AllocateStaging(size_t bytes, const std::string& tag) {
  Use();
  void* p = nullptr;
  if (cudaError_t e = cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocDefault); e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::ResourceExhausted(name() + ": page-locked staging of " + std::to_string(bytes) + " bytes for " +
                                     tag + " failed (" + CudaError(e) + ")");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  live_[id] = Live{Kind::kStaging, 0, 0, {}};  // host memory: not the device's bytes
  return DeviceBuffer{p, bytes, id};
}

namespace {

void* PinnedAllocate(size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;  // HostFloats falls back to the heap
  }
  return p;
}

void PinnedRelease(void* p) {
  if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace

HostAllocator CudaBackend::ResultAllocator() const {
  // Page-locked unless LLMHOST_CUDA_PINNED_RESULTS=off: 128 sequences of a
  // 128K vocabulary on an H100 2,349 / 2,398 -> 2,544 / 2,593 tok/s (+8%).
  const char* v = std::getenv("LLMHOST_CUDA_PINNED_RESULTS");
  if (v != nullptr && std::strcmp(v, "off") == 0) return {};
  return {PinnedAllocate, PinnedRelease};
}

void CudaBackend::Free(DeviceBuffer& buf) {
  auto recording = WaitForRecording();
  if (!buf.valid()) return;
  Use();
  Live l;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(buf.id);
    if (it == live_.end()) return;
    l = std::move(it->second);
    live_.erase(it);
    stats_.bytes_in_use -= std::min<uint64_t>(stats_.bytes_in_use, l.bytes);
    if (l.kind != Kind::kStaging) --stats_.buffer_count;
  }
  switch (l.kind) {
    case Kind::kDevice:
      cudaStreamSynchronize(S(stream_));  // no queued op may still use it
      cudaFree(buf.data);
      break;
    case Kind::kStaging:
      cudaStreamSynchronize(S(stream_));
      cudaFreeHost(buf.data);
      break;
    case Kind::kReserved: {
      cudaStreamSynchronize(S(stream_));
      const auto base = reinterpret_cast<CUdeviceptr>(buf.data);
      for (const auto& [off, h] : l.granules) {
        Driver().unmap(base + off, granularity_);
        Driver().release(static_cast<CUmemGenericAllocationHandle>(h));
      }
      Driver().address_free(base, l.reserved);
      break;
    }
  }
  buf = DeviceBuffer{};
}

Result<DeviceBuffer> CudaBackend::Reserve(size_t max_bytes, const std::string& tag) {
  Use();
  const size_t size = (std::max<size_t>(max_bytes, 1) + granularity_ - 1) / granularity_ * granularity_;
  CUdeviceptr p = 0;
  if (Driver().reserve(&p, size, 0, 0, 0) != CUDA_SUCCESS) {
    return Status::ResourceExhausted(name() + ": reserving " + std::to_string(max_bytes >> 20) +
                                     " MiB of address space for " + tag + " failed");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  live_[id] = Live{Kind::kReserved, 0, size, {}};
  ++stats_.buffer_count;
  return DeviceBuffer{reinterpret_cast<void*>(p), max_bytes, id};
}

Status CudaBackend::Commit(const DeviceBuffer& buf, size_t offset, size_t bytes) {
  if (bytes == 0) return Status::OK();
  Use();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(buf.id);
  if (it == live_.end() || it->second.kind != Kind::kReserved || offset + bytes > buf.bytes) {
    return Status::InvalidArgument(name() + ": Commit outside a reserved buffer");
  }
  Live& l = it->second;
  const size_t g = granularity_;
  const size_t a = offset / g * g, b = std::min(l.reserved, (offset + bytes + g - 1) / g * g);
  const auto base = reinterpret_cast<CUdeviceptr>(buf.data);
  CUmemAllocationProp prop = DeviceProp(device_);
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof(access));
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<size_t> made;
  for (size_t off = a; off < b; off += g) {
    if (l.granules.count(off)) continue;
    CUmemGenericAllocationHandle h = 0;
    bool ok = Driver().create(&h, g, &prop, 0) == CUDA_SUCCESS;
    if (ok && Driver().map(base + off, g, 0, h, 0) != CUDA_SUCCESS) {
      Driver().release(h);
      ok = false;
    }
    if (ok && Driver().set_access(base + off, g, &access, 1) != CUDA_SUCCESS) {
      Driver().unmap(base + off, g);
      Driver().release(h);
      ok = false;
    }
    if (!ok) {
      for (size_t m : made) {
        Driver().unmap(base + m, g);
        Driver().release(static_cast<CUmemGenericAllocationHandle>(l.granules[m]));
        l.granules.erase(m);
        l.bytes -= g;
        stats_.bytes_in_use -= g;
      }
      return Status::ResourceExhausted(name() + ": committing " + std::to_string(bytes >> 20) +
                                       " MiB of device memory failed (the GPU is full)");
    }
    l.granules[off] = h;
    made.push_back(off);
    l.bytes += g;
    stats_.bytes_in_use += g;
  }
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_in_use);
  return Status::OK();
}

void CudaBackend::Decommit(const DeviceBuffer& buf, size_t offset, size_t bytes) {
  if (bytes == 0) return;
  Use();
  cudaStreamSynchronize(S(stream_));  // queued ops may still read the range
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(buf.id);
  if (it == live_.end() || it->second.kind != Kind::kReserved) return;
  Live& l = it->second;
  const size_t g = granularity_;
  // Whole granules inside the range; the last one too when the range runs to
  // the buffer's end (Commit rounded it up).
  const size_t a = (offset + g - 1) / g * g;
  const size_t b = offset + bytes >= buf.bytes ? l.reserved : (offset + bytes) / g * g;
  const auto base = reinterpret_cast<CUdeviceptr>(buf.data);
  for (auto g_it = l.granules.lower_bound(a); g_it != l.granules.end() && g_it->first < b;) {
    Driver().unmap(base + g_it->first, g);
    Driver().release(static_cast<CUmemGenericAllocationHandle>(g_it->second));
    l.bytes -= g;
    stats_.bytes_in_use -= g;
    g_it = l.granules.erase(g_it);
  }
}

MemoryStats CudaBackend::memory_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::pair<uint64_t, uint64_t> CudaBackend::device_memory_info() const {
  Use();
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
  return {free_b, total_b};
}

// ---- copies ---------------------------------------------------------------

bool CudaBackend::InBounds(const DeviceBuffer& buf, size_t offset, size_t bytes, const char* what) {
  if (buf.data != nullptr && offset <= buf.bytes && bytes <= buf.bytes - offset) return true;
  Fail(Status::Internal(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                        std::to_string(offset) + " of a buffer of " + std::to_string(buf.bytes)));
  return false;
}

void CudaBackend::CopyToDevice(const DeviceBuffer& dst, size_t dst_offset, const void* src, size_t bytes) {
  auto recording = WaitForRecording();
  if (!bytes || !InBounds(dst, dst_offset, bytes, "CopyToDevice")) return;
  Use();
  const cudaError_t e = cudaMemcpyAsync(static_cast<char*>(dst.data) + dst_offset, src, bytes,
                                        cudaMemcpyHostToDevice, S(stream_));
  if (e != cudaSuccess) Fail(Status::Internal("cuda CopyToDevice: " + CudaError(e)));
}

void CudaBackend::CopyToHost(void* dst, const DeviceBuffer& src, size_t src_offset, size_t bytes) {
  auto recording = WaitForRecording();
  if (!bytes || !InBounds(src, src_offset, bytes, "CopyToHost")) return;
  Use();
  cudaError_t e = cudaMemcpyAsync(dst, static_cast<const char*>(src.data) + src_offset, bytes,
                                  cudaMemcpyDeviceToHost, S(stream_));
  if (e == cudaSuccess) e = cudaStreamSynchronize(S(stream_));
  if (e != cudaSuccess) Fail(Status::Internal("cuda CopyToHost: " + CudaError(e)));
}

void CudaBackend::CopyDeviceToDevice(const DeviceBuffer& dst, size_t dst_offset, const DeviceBuffer& src,
                                     size_t src_offset, size_t bytes) {
  auto recording = WaitForRecording();
  if (!bytes || !InBounds(dst, dst_offset, bytes, "CopyDeviceToDevice") ||
      !InBounds(src, src_offset, bytes, "CopyDeviceToDevice")) {
    return;
  }
  Use();
  const cudaError_t e = cudaMemcpyAsync(static_cast<char*>(dst.data) + dst_offset,
                                        static_cast<const char*>(src.data) + src_offset, bytes,
                                        cudaMemcpyDeviceToDevice, S(stream_));
  if (e != cudaSuccess) Fail(Status::Internal("cuda CopyDeviceToDevice: " + CudaError(e)));
}

Status CudaBackend::Synchronize() {
  auto recording = WaitForRecording();
  Use();
  const cudaError_t e = cudaStreamSynchronize(S(stream_));
  if (e != cudaSuccess) Fail(Status::Internal(name() + ": " + CudaError(e)));
  std::lock_guard<std::mutex> lock(mu_);
  return sticky_;
}

// ---- weights --------------------------------------------------------------

Result<WeightMatrix> CudaBackend::PrepareWeight(const WeightMatrix& host) {
  RETURN_IF_ERROR(llmhost::CheckWeight(host));
  Use();
  cuda::WFmt fmt;
  const bool stored = KeptAsStored(host, &fmt);
  // One allocation: the data (stored rows, or f32 rows), then MLX scales and
  // biases (FP8: scales only).
  const size_t data_bytes = stored ? static_cast<size_t>(host.rows) * static_cast<size_t>(quant::RowBytes(host))
                                   : static_cast<size_t>(host.rows) * static_cast<size_t>(host.cols) * 4;
  const bool grouped = host.format == WeightFormat::kMlxAffine || host.format == WeightFormat::kFp8E4M3;
  const size_t param_bytes = grouped ? static_cast<size_t>(host.rows) * static_cast<size_t>(host.cols / host.group_size) *
                                           DTypeSize(host.scale_dtype)
                                     : 0;
  const int param_arrays = host.format == WeightFormat::kMlxAffine ? 2 : grouped ? 1 : 0;
  const size_t order_bytes = host.col_order != nullptr ? static_cast<size_t>(host.cols) * 4 : 0;
  const size_t bytes = Aligned(data_bytes) + param_arrays * Aligned(param_bytes) + order_bytes;
  void* p = nullptr;
  if (cudaError_t ce = cudaMalloc(&p, std::max<size_t>(bytes, 1)); ce != cudaSuccess) {
    (void)cudaGetLastError();
    const auto [free_b, total_b] = device_memory_info();
    return Status::ResourceExhausted(name() + ": uploading a " + std::to_string(host.rows) + "x" +
                                     std::to_string(host.cols) + " weight (" + std::to_string(bytes >> 20) +
                                     " MiB) failed (" + CudaError(ce) + "; " + std::to_string(free_b >> 20) +
                                     " of " + std::to_string(total_b >> 20) + " MiB free)");
  }
  char* base = static_cast<char*>(p);
  cudaError_t ce = cudaSuccess;
  WeightMatrix d = host;
  d.data = base;
  // Copies on the backend's stream, waited for before returning: from
  // pageable memory a copy may return before its DMA ends, and the kernels'
  // stream is not ordered after the legacy one.
  auto upload = [&](void* dst, const void* src, size_t n) {
    cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, S(stream_));
    return e == cudaSuccess ? cudaStreamSynchronize(S(stream_)) : e;
  };
  if (stored) {
    ce = upload(base, host.data, data_bytes);
    if (param_bytes > 0 && ce == cudaSuccess) {
      d.scales = base + Aligned(data_bytes);
      ce = upload(const_cast<void*>(d.scales), host.scales, param_bytes);
      if (param_arrays == 2) {
        d.biases = base + Aligned(data_bytes) + Aligned(param_bytes);
        if (ce == cudaSuccess) ce = upload(const_cast<void*>(d.biases), host.biases, param_bytes);
      }
    }
  } else {
    // Exact f32 rows, a slab at a time.
    d = WeightMatrix{};
    d.format = WeightFormat::kF32;
    d.rows = host.rows;
    d.cols = host.cols;
    d.data = base;
    const int64_t slab_rows = std::max<int64_t>(1, (16 << 20) / (host.cols * 4));
    std::vector<float> slab(static_cast<size_t>(std::min(slab_rows, host.rows) * host.cols));
    for (int64_t r0 = 0; r0 < host.rows && ce == cudaSuccess; r0 += slab_rows) {
      const int64_t nr = std::min(slab_rows, host.rows - r0);
      for (int64_t r = 0; r < nr; ++r) {
        quant::DequantizeRangeScalar(host, r0 + r, 0, host.cols, slab.data() + r * host.cols);
      }
      ce = upload(reinterpret_cast<float*>(base) + r0 * host.cols, slab.data(), static_cast<size_t>(nr * host.cols) * 4);
    }
  }
  if (order_bytes > 0 && ce == cudaSuccess) {
    auto* order = reinterpret_cast<int32_t*>(base + Aligned(data_bytes) + param_arrays * Aligned(param_bytes));
    ce = upload(order, host.col_order, order_bytes);
    d.col_order = order;
  }
  if (ce != cudaSuccess) {
    (void)cudaGetLastError();
    cudaFree(p);
    return Status::Internal(name() + ": uploading a weight failed (" + CudaError(ce) + ")");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    weights_[p] = bytes;
    stats_.bytes_in_use += bytes;
    stats_.weight_bytes += bytes;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes_in_use);
  }
  return d;
}

void CudaBackend::ReleaseWeight(const WeightMatrix& w) {
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = weights_.find(w.data);
    if (it == weights_.end()) return;
    bytes = it->second;
    weights_.erase(it);
    stats_.bytes_in_use -= std::min<uint64_t>(stats_.bytes_in_use, bytes);
    stats_.weight_bytes -= std::min<uint64_t>(stats_.weight_bytes, bytes);
    ++generation_;  // a recorded graph may read it
  }
  Use();
  cudaStreamSynchronize(S(stream_));
  cudaFree(const_cast<void*>(w.data));
}

// ---- ops ------------------------------------------------------------------

bool CudaBackend::PromptRowsOnTensorCores() const {
  return precision_ == Precision::kAuto || precision_ == Precision::kFastBf16;
}

// Prompt rows' activations (MatMuls and attention's q and probabilities) at
// kAuto: rounded to bf16 once, as bf16 models run in their own framework, in
// llama.cpp and on AMX CPUs; prompts are compute-bound, and a second term
// doubles the tensor-core work. LLMHOST_CUDA_PROMPT_SPLIT=on keeps two
// terms (hi + lo, ~16 bits of f32's mantissa). Generated rows keep two terms
// at kAuto: they are bound by the weights' bytes, where the second costs
// nothing measurable.
bool CudaBackend::PromptRowsSplit() const {
  return precision_ == Precision::kAuto && cuda::EnvSwitch("LLMHOST_CUDA_PROMPT_SPLIT", false);
}

// Generated rows of bf16 and MLX 4/8-bit weights at the precisions that round
// prompt rows to 16 bits: the batch-invariant MMA kernels (matmul_mma.cuh),
// chosen by the weight and the precision alone.
bool CudaBackend::GeneratedRowsOnTensorCores(const cuda::DevWeight& d) const {
  return PromptRowsOnTensorCores() && cuda::MmaRows(d);
}

bool CudaBackend::Int8Rows(const cuda::DevWeight& d, RowKind kind) const {
  const char* v = std::getenv("LLMHOST_CUDA_MLX_INT8");  // read at each call, as the other switches
  const bool enabled = v == nullptr || std::strcmp(v, "off") != 0;
  const bool by_precision =
      precision_ == Precision::kFastInt8 || (precision_ == Precision::kAuto && kind == RowKind::kGenerated);
  return enabled && by_precision && cuda::Int8MlxRows(d);
}

void CudaBackend::Int8MatMuls(const cuda::DevWeight* d, float* const* y, int count, const float* x, int64_t n) {
  if (!Scratch(&int8_scratch_, static_cast<size_t>(cuda::Int8QxBytes(n, d[0].cols)), "int8 activations")) return;
  cuda::LaunchQuantizeX(x, n, d[0].cols, int8_scratch_.data, S(stream_));
  cuda::LaunchInt8MlxMatMul(d, y, count, int8_scratch_.data, n, S(stream_));
}

void CudaBackend::MmaMatMuls(const cuda::DevWeight* d, float* const* y, int count, const float* x, int64_t n) {
  const bool split = precision_ == Precision::kAuto;
  const auto need = static_cast<size_t>(cuda::MmaTermsBytes(d, count, n, split));
  // Where the scratch is not there the wide kernel runs (the same sums): a
  // recording does not grow it (the plain run before it did), and a size the
  // allocator refused once is not asked for again (each try would free the
  // old buffer and drop every recorded graph).
  uint16_t* terms = nullptr;
  if (need > 0 && need < terms_refused_from_) {
    if (tc_scratch_.bytes >= need) {
      terms = static_cast<uint16_t*>(tc_scratch_.data);
    } else if (!capturing_) {
      if (Scratch(&tc_scratch_, need, "tensor-core activations", /*required=*/false)) {
        terms = static_cast<uint16_t*>(tc_scratch_.data);
      } else {
        terms_refused_from_ = need;
      }
    }
  }
  cuda::LaunchMmaMatMul(d, y, count, x, n, split, S(stream_), terms);
}

bool CudaBackend::Prepared(const WeightMatrix& w, const char* op, cuda::DevWeight* d) {
  if (DevWeightOf(w, d)) return true;
  Fail(Status::InvalidArgument(std::string("cuda ") + op + ": the weight was not prepared by this backend"));
  return false;
}

bool CudaBackend::Scratch(DeviceBuffer* buf, size_t need, const char* tag, bool required) {
  if (buf->bytes >= need) return true;
  if (capturing_) {  // a recording cannot allocate (or wait for the stream)
    if (capture_error_.ok()) capture_error_ = Status::Internal(std::string("cuda: ") + tag + " grew while recording");
    return false;
  }
  ++generation_;
  Free(*buf);
  auto b = Allocate(need, tag);
  if (!b.ok()) {
    if (required) Fail(b.status());
    return false;
  }
  *buf = *b;
  return true;
}

namespace {

// Batch invariance (a token's bits the same alone and in any batch) is kept
// unless LLMHOST_CUDA_BATCH_INVARIANT=off; read at each call, as the other switches.
bool BatchInvariant() {
  return cuda::EnvSwitch("LLMHOST_CUDA_BATCH_INVARIANT", true);
}

// The power of two cuBLASLt's plan is chosen for: n rows share a plan with
// the others of (p / 2, p].
int64_t PlanRowsFor(int64_t n) {
  int64_t p = 16;
  while (p < n) p *= 2;
  return p;
}

// Prompt rows' two bf16 terms as one GEMM of 2n rows (StackedTermsMatMul)
// unless LLMHOST_CUDA_STACK_TERMS=off: 512-token prefill of the Llama-3-8B
// shape 13.7K -> 16.0K tok/s on an H100, the same bits.
bool StackTerms() {
  return cuda::EnvSwitch("LLMHOST_CUDA_STACK_TERMS", true);
}

// The products of 2n stacked rows, f32.
size_t StackedBytes(const cuda::DevWeight& d, int64_t n) { return static_cast<size_t>(2 * n * d.rows) * sizeof(float); }

}  // namespace

bool CudaBackend::StackedTermsMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y,
                                     int64_t plan_rows) {
  if (!Scratch(&tc_scratch_, static_cast<size_t>(2 * n * d.cols) * 2, "tensor-core activations")) return true;
  auto* hi = static_cast<uint16_t*>(tc_scratch_.data);
  cuda::LaunchSplitBf16(x, n * d.cols, hi, hi + n * d.cols, S(stream_));  // lo right after hi: rows n .. 2n - 1
  if (!Scratch(&stacked_y_, StackedBytes(d, n), "stacked products")) return true;
  float* products = stacked_y_.as<float>();
  if (!lt_->MatMul(cuda::LtGemm::Type::kBF16, d.data, d.rows, d.cols, hi, 2 * n, 0.0f, products,
                   lt_workspace_.data, S(stream_), plan_rows)) {
    return false;
  }
  // hi's products + lo's: the sum a second GEMM onto the first (beta 1) makes.
  cuda::LaunchAdd(products, products + n * d.rows, n * d.rows, y, S(stream_));
  return true;
}

bool CudaBackend::PromptGemm(const cuda::DevWeight& d, const uint16_t* hi, int64_t n, float* y, void* workspace,
                             void* stream) {
  using L = cuda::LtGemm;
  auto gemm = [&](int64_t plan, float* out) {
    return lt_->MatMul(L::Type::kBF16, d.data, d.rows, d.cols, hi, n, 0.0f, out, workspace, S(stream), plan);
  };
  const int64_t b = L::BucketFor(n);
  const L::Bits bits = b > 0 ? lt_->BucketBits(L::Type::kBF16, d.rows, d.cols, b) : L::Bits::kDiffer;
  if (bits != L::Bits::kUnknown) return gemm(bits == L::Bits::kSame ? -b : 0, y);
  // The bucket's first chunk: the shape's one plan gives y, the bucket's plan
  // a copy beside it, and the two are compared once, bit for bit.
  if (!gemm(0, y)) return false;
  const size_t bytes = static_cast<size_t>(n * d.rows) * sizeof(float);
  if (capturing_ || bytes > kMaxBucketCheckBytes) return true;  // stays unknown: the one plan
  auto probe = Allocate(bytes, "cuBLASLt plan check");
  if (!probe.ok()) return true;
  bool same = gemm(-b, probe->as<float>());
  if (same) {
    std::vector<float> one(static_cast<size_t>(n * d.rows)), own(one.size());
    same = cudaMemcpyAsync(one.data(), y, bytes, cudaMemcpyDeviceToHost, S(stream)) == cudaSuccess &&
           cudaMemcpyAsync(own.data(), probe->data, bytes, cudaMemcpyDeviceToHost, S(stream)) == cudaSuccess &&
           cudaStreamSynchronize(S(stream)) == cudaSuccess && std::memcmp(one.data(), own.data(), bytes) == 0;
  }
  Free(*probe);
  lt_->SetBucketBits(L::Type::kBF16, d.rows, d.cols, b, same);
  return true;
}

bool CudaBackend::LtTakes(const cuda::DevWeight& d, const float* y) const {
  // bf16 weights as stored; rows a multiple of 4 keeps every run's y 16-byte
  // aligned (a property of the weight: the same choice for every batch).
  return lt_ && d.fmt == cuda::WFmt::kBF16 && d.rows % 4 == 0 && d.cols % 8 == 0 &&
         (reinterpret_cast<uintptr_t>(y) & 15u) == 0;
}

bool CudaBackend::LtMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y) {
  if (!LtTakes(d, y)) return false;
  // x rounded to bf16 once, or split into two bf16 terms (PromptRowsSplit).
  const bool split = PromptRowsSplit();
  // Stacked where the products' scratch fits (else two GEMMs, which need none).
  if (split && StackTerms() && StackedBytes(d, n) <= kMaxStackedBytes && 2 * n <= kMaxStackedRows &&
      Scratch(&stacked_y_, StackedBytes(d, n), "stacked products", /*required=*/false)) {
    return StackedTermsMatMul(d, x, n, y, 0);
  }
  const size_t half = (static_cast<size_t>(n * d.cols) * 2 + 255) / 256 * 256;
  if (!Scratch(&tc_scratch_, split ? 2 * half : half, "tensor-core activations")) return true;  // failed: sticky
  auto* hi = static_cast<uint16_t*>(tc_scratch_.data);
  auto* lo = split ? reinterpret_cast<uint16_t*>(static_cast<char*>(tc_scratch_.data) + half) : nullptr;
  cuda::LaunchSplitBf16(x, n * d.cols, hi, lo, S(stream_));
  using T = cuda::LtGemm::Type;
  if (!split) return PromptGemm(d, hi, n, y, lt_workspace_.data, stream_);
  if (!lt_->MatMul(T::kBF16, d.data, d.rows, d.cols, hi, n, 0.0f, y, lt_workspace_.data, S(stream_))) return false;
  if (!lt_->MatMul(T::kBF16, d.data, d.rows, d.cols, lo, n, 1.0f, y, lt_workspace_.data, S(stream_))) {
    Fail(Status::Internal("cuda MatMul: cuBLASLt refused the second term of a GEMM it ran the first of"));
  }
  return true;
}

// The largest quantized weight widened for prompt rows (a Llama-3-70B FFN
// matrix is 470 MiB as bf16); larger ones (a 128K vocabulary's head) keep
// llmhost's own tensor-core kernel.
constexpr size_t kMaxWidenedBytes = size_t{512} << 20;

bool CudaBackend::WidenedLtMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y) {
  const char* v = std::getenv("LLMHOST_CUDA_WIDEN_PROMPT");
  if (v != nullptr && std::strcmp(v, "off") == 0) return false;
  const size_t bytes = static_cast<size_t>(d.rows * d.cols) * 2;
  if (!lt_ || !cuda::DequantizableToBf16(d) || bytes > kMaxWidenedBytes || d.rows % 4 != 0 ||
      (reinterpret_cast<uintptr_t>(y) & 15u) != 0) {
    return false;
  }
  if (widened_.bytes < bytes) {
    // Grown to the largest weight widened so far, never shrunk (counted as the
    // backend's bytes). Where it cannot grow, the weight keeps its own kernel.
    if (capturing_) {  // the recording is dropped; the plain run that follows grows it
      if (capture_error_.ok()) capture_error_ = Status::Internal("cuda: widened weight grew while recording");
      return true;
    }
    ++generation_;
    if (widened_.valid()) Free(widened_);
    auto b = Allocate(bytes, "widened weight");
    if (!b.ok()) return false;
    widened_ = *b;
  }
  cuda::LaunchDequantizeBf16(d, widened_.as<uint16_t>(), S(stream_));
  cuda::DevWeight b = d;
  b.fmt = cuda::WFmt::kBF16;
  b.data = widened_.data;
  b.scales = b.biases = nullptr;
  b.row_bytes = d.cols * 2;
  return LtMatMul(b, x, n, y);
}

bool CudaBackend::AnyOrderLtMatMul(const cuda::DevWeight& d, const float* x, int64_t n, float* y) {
  if (BatchInvariant() || n <= kAnyOrderAbove || !lt_ || d.fmt != cuda::WFmt::kBF16 || d.rows % 4 != 0 ||
      d.cols % 8 != 0 || (reinterpret_cast<uintptr_t>(y) & 15u) != 0) {
    return false;
  }
  // At kAuto x's two bf16 terms are stacked as 2n rows of one GEMM, so the
  // weight is read once, and the two products added: y = x_hi·Wᵀ + x_lo·Wᵀ.
  // Products past kMaxStackedBytes (a large vocabulary's head at a big
  // batch) keep the batch-invariant kernel.
  if (precision_ == Precision::kAuto) {
    return StackedBytes(d, n) <= kMaxStackedBytes && StackedTermsMatMul(d, x, n, y, PlanRowsFor(2 * n));
  }
  if (!Scratch(&tc_scratch_, static_cast<size_t>(n * d.cols) * 2, "tensor-core activations")) return true;
  auto* hi = static_cast<uint16_t*>(tc_scratch_.data);
  cuda::LaunchSplitBf16(x, n * d.cols, hi, nullptr, S(stream_));
  return lt_->MatMul(cuda::LtGemm::Type::kBF16, d.data, d.rows, d.cols, hi, n, 0.0f, y, lt_workspace_.data,
                     S(stream_), PlanRowsFor(n));
}

bool CudaBackend::SharedXLtMatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n) {
  if (PromptRowsSplit() || n <= 0) return false;
  cuda::DevWeight d[cuda::kMaxFusedWeights];
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!Prepared(*jobs[i].w, "MatMul", &d[i])) return true;  // failed: sticky
    // Each as MatMul would take it, all decided before anything is enqueued:
    // a weight cuBLASLt has no plan for takes MatMul's own kernel.
    if (d[i].col_order != nullptr || d[i].cols != d[0].cols || !LtTakes(d[i], jobs[i].y) ||
        !lt_->HasPlan(cuda::LtGemm::Type::kBF16, d[i].rows, d[i].cols)) {
      return false;
    }
  }
  Use();
  if (!Scratch(&tc_scratch_, static_cast<size_t>(n * d[0].cols) * 2, "tensor-core activations")) return true;
  auto* hi = static_cast<uint16_t*>(tc_scratch_.data);
  cuda::LaunchSplitBf16(x, n * d[0].cols, hi, nullptr, S(stream_));
  // The first GEMM on the stream, the others beside it on the side stream
  // where LLMHOST_CUDA_PROMPT_STREAMS=on: a prompt chunk's k and v (or up)
  // fill the SMs q (or gate) leaves idle. The same kernels and bits.
  const bool side = !capturing_ && cuda::EnvSwitch("LLMHOST_CUDA_PROMPT_STREAMS", false) && SideStream();
  if (side) {
    cudaEventRecord(static_cast<cudaEvent_t>(fork_event_), S(stream_));
    cudaStreamWaitEvent(S(side_stream_), static_cast<cudaEvent_t>(fork_event_), 0);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const bool beside = side && i > 0;
    if (!PromptGemm(d[i], hi, n, jobs[i].y, beside ? side_workspace_.data : lt_workspace_.data,
                    beside ? side_stream_ : stream_)) {
      Fail(Status::Internal("cuda MatMuls: cuBLASLt refused a prompt GEMM beside others it takes"));
      break;
    }
  }
  if (side) {  // the stream waits for the side stream's GEMMs (and tc_scratch_ is free again after them)
    cudaEventRecord(static_cast<cudaEvent_t>(join_event_), S(side_stream_));
    cudaStreamWaitEvent(S(stream_), static_cast<cudaEvent_t>(join_event_), 0);
  }
  CheckLaunch("MatMul");
  return true;
}

bool CudaBackend::SideStream() {
  if (side_stream_ != nullptr) return true;
  if (side_refused_) return false;
  side_refused_ = true;  // until every part is made
  cudaStream_t s = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&join, cudaEventDisableTiming) != cudaSuccess) {
    (void)cudaGetLastError();
    if (join) cudaEventDestroy(join);
    if (fork) cudaEventDestroy(fork);
    if (s) cudaStreamDestroy(s);
    return false;
  }
  auto ws = Allocate(cuda::LtGemm::kWorkspaceBytes, "cuBLASLt side workspace");
  if (!ws.ok()) {
    cudaEventDestroy(join);
    cudaEventDestroy(fork);
    cudaStreamDestroy(s);
    return false;
  }
  side_workspace_ = *ws;
  side_stream_ = s;
  fork_event_ = fork;
  join_event_ = join;
  side_refused_ = false;
  return true;
}

void CudaBackend::MatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n, RowKind rows) {
  // Prompt rows go to the tensor cores one weight at a time, x rounded once
  // for the bf16 weights that share it; generated rows of matching weights
  // are one launch (the same kernel and sums as MatMul).
  if (rows == RowKind::kPrompt && PromptRowsOnTensorCores() && jobs.size() >= 2 &&
      jobs.size() <= static_cast<size_t>(cuda::kMaxFusedWeights) && SharedXLtMatMuls(jobs, x, n)) {
    return;
  }
  if ((rows == RowKind::kPrompt && PromptRowsOnTensorCores()) || jobs.size() < 2 ||
      jobs.size() > static_cast<size_t>(cuda::kMaxFusedWeights)) {
    Backend::MatMuls(jobs, x, n, rows);
    return;
  }
  cuda::DevWeight d[cuda::kMaxFusedWeights];
  float* ys[cuda::kMaxFusedWeights];
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!Prepared(*jobs[i].w, "MatMul", &d[i])) return;
    if (d[i].col_order != nullptr) {  // each reads x in its own order: one at a time
      Backend::MatMuls(jobs, x, n, rows);
      return;
    }
    ys[i] = jobs[i].y;
  }
  // Without batch invariance, bf16 weights past 8 rows: one cuBLASLt GEMM each.
  if (rows == RowKind::kGenerated && PromptRowsOnTensorCores() && n > kAnyOrderAbove && !BatchInvariant() &&
      d[0].fmt == cuda::WFmt::kBF16) {
    Backend::MatMuls(jobs, x, n, rows);
    return;
  }
  Use();
  if (Int8Rows(d[0], rows)) {
    bool same = true;
    for (size_t i = 0; i < jobs.size(); ++i) same = same && cuda::Int8Fusable(d[0], d[i]);
    if (!same) {  // one at a time: each weight's own kernel
      Backend::MatMuls(jobs, x, n, rows);
      return;
    }
    Int8MatMuls(d, ys, static_cast<int>(jobs.size()), x, n);
    CheckLaunch("MatMul");
    return;
  }
  if (GeneratedRowsOnTensorCores(d[0])) {
    bool same = true;
    for (size_t i = 0; i < jobs.size(); ++i) same = same && cuda::MmaFusable(d[0], d[i]);
    if (same) {
      MmaMatMuls(d, ys, static_cast<int>(jobs.size()), x, n);
      CheckLaunch("MatMul");
      return;
    }
  }
  if (!cuda::LaunchFusedMatMul(d, ys, static_cast<int>(jobs.size()), x, n, S(stream_))) {
    Backend::MatMuls(jobs, x, n, rows);
    return;
  }
  CheckLaunch("MatMul");
}

void CudaBackend::MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, RowKind rows) {
  cuda::DevWeight d;
  if (!Prepared(w, "MatMul", &d)) return;
  Use();
  if (d.col_order != nullptr) {  // x in the weight's stored column order first
    if (!Scratch(&order_scratch_, static_cast<size_t>(n * d.cols) * sizeof(float), "reordered activations")) return;
    cuda::LaunchGatherColumns(x, n, d.cols, d.col_order, order_scratch_.as<float>(), S(stream_));
    x = order_scratch_.as<float>();
    d.col_order = nullptr;
  }
  if (Int8Rows(d, rows)) {
    Int8MatMuls(&d, &y, 1, x, n);
  } else if (rows == RowKind::kPrompt && PromptRowsOnTensorCores() &&
             (LtMatMul(d, x, n, y) || WidenedLtMatMul(d, x, n, y))) {
    // done on cuBLASLt
  } else if (rows == RowKind::kPrompt && PromptRowsOnTensorCores()) {
    // The f16 copy of x: a scratch buffer kept for the next call (grown to the
    // largest prompt chunk seen, never shrunk; counted as the backend's bytes).
    const auto need = static_cast<size_t>(cuda::TensorCoreScratchBytes(n, d.cols));
    if (!Scratch(&tc_scratch_, need, "tensor-core activations")) return;
    cuda::LaunchTensorCoreMatMul(d, x, n, y, tc_scratch_.data, S(stream_));
  } else if (rows == RowKind::kGenerated && PromptRowsOnTensorCores() && AnyOrderLtMatMul(d, x, n, y)) {
    // done on cuBLASLt, batch invariance given up
  } else if (rows == RowKind::kGenerated && GeneratedRowsOnTensorCores(d)) {
    MmaMatMuls(&d, &y, 1, x, n);
  } else {
    cuda::LaunchMatMul(d, x, n, y, S(stream_));
  }
  CheckLaunch("MatMul");
}

// Unrounded activations, whatever the precision: which experts a token goes
// to must not flip under 16-bit rounding.
void CudaBackend::RouterMatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  cuda::DevWeight d;
  if (!Prepared(w, "RouterMatMul", &d)) return;
  if (d.col_order != nullptr) {
    Fail(Status::InvalidArgument("cuda RouterMatMul: a router weight in a column order of its own"));
    return;
  }
  Use();
  cuda::LaunchMatMul(d, x, n, y, S(stream_));
  CheckLaunch("RouterMatMul");
}

void CudaBackend::Embedding(const WeightMatrix& w, const int32_t* ids, int64_t n, float scale, float* out,
                            int64_t first_id) {
  cuda::DevWeight d;
  if (!Prepared(w, "Embedding", &d)) return;
  if (d.col_order != nullptr) {
    Fail(Status::InvalidArgument("cuda Embedding: an embedding table in a column order of its own"));
    return;
  }
  Use();
  cuda::LaunchEmbedding(d, ids, n, scale, out, first_id, S(stream_));
  CheckLaunch("Embedding");
}

void CudaBackend::RmsNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
                          float eps, bool add_one, float* out) {
  Use();
  cuda::LaunchRmsNorm(x, rows, 1, stride, dim, weight, eps, add_one, out, S(stream_));
  CheckLaunch("RmsNorm");
}

void CudaBackend::RmsNormHeads(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                               int64_t token_stride, const float* weight, float eps, bool add_one) {
  Use();
  cuda::LaunchRmsNorm(x, n_tokens * n_heads, n_heads, token_stride, head_dim, weight, eps, add_one, x, S(stream_));
  CheckLaunch("RmsNormHeads");
}

void CudaBackend::Rope(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                       const RopeParams& p) {
  Use();
  cuda::LaunchRope(x, n_tokens, positions, inv_freq, 0, nullptr, p, S(stream_));
  CheckLaunch("Rope");
}

void CudaBackend::RopeTables(float* x, int64_t n_tokens, const int32_t* positions, const float* inv_freq,
                             int64_t table_stride, const int32_t* table_of, const RopeParams& p) {
  Use();
  cuda::LaunchRope(x, n_tokens, positions, inv_freq, table_stride, table_of, p, S(stream_));
  CheckLaunch("RopeTables");
}

// The K/V types the CUDA kernels store; any other fails the backend, naming the op.
bool CudaBackend::KvTypeStorable(DType kv_dtype, const char* op) {
  if (kv_dtype == DType::kF32 || kv_dtype == DType::kBF16 || kv_dtype == DType::kF16 || kv_dtype == DType::kF8_E4M3) {
    return true;
  }
  Fail(Status::InvalidArgument(std::string("cuda ") + op + ": KV type " + DTypeName(kv_dtype)));
  return false;
}

void CudaBackend::StoreKv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n,
                          int64_t kv_dim, const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype) {
  if (!KvTypeStorable(kv_dtype, "StoreKv")) return;
  Use();
  cuda::LaunchStoreKv(k, k_stride, v, v_stride, n, kv_dim, slots, k_cache, v_cache, kv_dtype, S(stream_));
  CheckLaunch("StoreKv");
}

void CudaBackend::Attention(const float* q, const void* k_cache, const void* v_cache, const AttentionSeq* seqs,
                            int64_t n_seqs, const AttentionParams& p, float* out) {
  if (p.head_dim > cuda::kMaxAttentionHeadDim || p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0) {
    Fail(Status::NotSupported("cuda Attention: head_dim " + std::to_string(p.head_dim) + " with " +
                              std::to_string(p.n_heads) + "/" + std::to_string(p.n_kv_heads) +
                              " heads (head_dim <= 512, heads a multiple of KV heads)"));
    return;
  }
  if (n_seqs > 0 && p.n_rows <= 0) {
    Fail(Status::InvalidArgument("cuda Attention: AttentionParams::n_rows (the batch's query rows) is not set"));
    return;
  }
  if (n_seqs > 0 && p.max_kv_len <= 0) {
    Fail(Status::InvalidArgument("cuda Attention: AttentionParams::max_kv_len (the batch's longest kv_len) is not set"));
    return;
  }
  if (n_seqs <= 0) return;
  Use();
  // Prompt rows on the tensor cores (with the prompt rows' MatMul rounding),
  // generated rows by the chunk kernel below (f32, split over the keys).
  const bool prompt_tc = PromptRowsOnTensorCores() && cuda::PromptAttentionEnabled() &&
                         cuda::PromptAttentionFits(p, PromptRowsSplit());
  if (prompt_tc) {
    cuda::LaunchPromptAttention(q, k_cache, v_cache, seqs, n_seqs, p, PromptRowsSplit(), out,
                                S(stream_));
    if (p.n_generated_rows <= 0) {
      CheckLaunch("Attention");
      return;
    }
  }
  // The chunk partials: a scratch buffer for up to kAttentionScratchBytes
  // (more rows than fit are launched in groups), grown to the largest need
  // seen and kept; counted as the backend's bytes.
  constexpr size_t kAttentionScratchBytes = size_t{128} << 20;
  constexpr int64_t kMaxRowsPerLaunch = 65535;  // gridDim.z
  const size_t per_row = cuda::AttentionScratchPerRow(p);
  const int64_t fit = std::max<int64_t>(1, static_cast<int64_t>(kAttentionScratchBytes / per_row));
  const int64_t rows = std::min({p.n_rows, fit, kMaxRowsPerLaunch});
  if (!Scratch(&attn_scratch_, static_cast<size_t>(rows) * per_row, "attention partials")) return;
  cuda::LaunchAttention(q, k_cache, v_cache, seqs, n_seqs, p, out, attn_scratch_.as<float>(), rows, prompt_tc,
                        S(stream_));
  CheckLaunch("Attention");
}

void CudaBackend::GatedActivation(Activation act, const float* gate, int64_t gate_stride, const float* up,
                                  int64_t up_stride, int64_t rows, int64_t cols, float* out, int64_t out_stride) {
  Use();
  cuda::LaunchGatedActivation(act, gate, gate_stride, up, up_stride, rows, cols, out, out_stride, S(stream_));
  CheckLaunch("GatedActivation");
}

// LLMHOST_CUDA_FUSED_STEPS=off runs AddRmsNorm and RopeStoreKv as the ops
// they stand for (the same bits, more launches): for speed comparisons.
static bool FusedStepsEnabled() {
  return cuda::EnvSwitch("LLMHOST_CUDA_FUSED_STEPS", true);
}

void CudaBackend::AddRmsNorm(float* x, const float* t, int64_t rows, int64_t dim, const float* weight, float eps,
                             bool add_one, float* out) {
  if (!FusedStepsEnabled()) {
    Backend::AddRmsNorm(x, t, rows, dim, weight, eps, add_one, out);
    return;
  }
  Use();
  cuda::LaunchAddRmsNorm(x, t, rows, dim, weight, eps, add_one, out, S(stream_));
  CheckLaunch("AddRmsNorm");
}

void CudaBackend::RopeStoreKv(float* q, const RopeParams& rq, float* k, const RopeParams& rk, const float* v,
                              int64_t v_stride, int64_t n, const int32_t* positions, const float* inv_freq,
                              int64_t kv_dim, const int32_t* slots, void* k_cache, void* v_cache, DType kv_dtype) {
  if (!KvTypeStorable(kv_dtype, "RopeStoreKv")) return;
  Use();
  if (!FusedStepsEnabled() ||
      !cuda::LaunchRopeStoreKv(q, rq, k, rk, v, v_stride, n, positions, inv_freq, kv_dim, slots, k_cache, v_cache,
                               kv_dtype, S(stream_))) {
    Backend::RopeStoreKv(q, rq, k, rk, v, v_stride, n, positions, inv_freq, kv_dim, slots, k_cache, v_cache, kv_dtype);
    return;
  }
  CheckLaunch("RopeStoreKv");
}

void CudaBackend::Add(const float* a, const float* b, int64_t n, float* out) {
  Use();
  cuda::LaunchAdd(a, b, n, out, S(stream_));
  CheckLaunch("Add");
}

void CudaBackend::AddBias(float* x, int64_t rows, int64_t cols, int64_t stride, const float* bias) {
  Use();
  cuda::LaunchAddBias(x, rows, cols, stride, bias, S(stream_));
  CheckLaunch("AddBias");
}

void CudaBackend::Scale(float* x, int64_t n, float s) {
  Use();
  cuda::LaunchScale(x, n, s, S(stream_));
  CheckLaunch("Scale");
}

void CudaBackend::Fill(float* x, int64_t n, float value) {
  Use();
  cuda::LaunchFill(x, n, value, S(stream_));
  CheckLaunch("Fill");
}

void CudaBackend::Softcap(float* x, int64_t n, float cap) {
  Use();
  cuda::LaunchSoftcap(x, n, cap, S(stream_));
  CheckLaunch("Softcap");
}

void CudaBackend::EncoderAttention(const float* q, const float* k, const float* v, const EncoderSeq* seqs,
                                   int64_t n_seqs, const EncoderAttentionParams& p, float* out) {
  constexpr size_t kMaxSmem = 227 << 10;  // Hopper's opt-in shared memory per block
  if (n_seqs > 0 && (p.n_rows <= 0 || p.max_len <= 0)) {
    Fail(Status::InvalidArgument("cuda EncoderAttention: EncoderAttentionParams::n_rows / max_len are not set"));
    return;
  }
  if (p.relative && p.max_len > p.max_distance) {
    Fail(Status::InvalidArgument("cuda EncoderAttention: a sequence of " + std::to_string(p.max_len) +
                                 " tokens is longer than the relative position table's " +
                                 std::to_string(p.max_distance)));
    return;
  }
  if (cuda::EncoderAttentionSmemBytes(p) > kMaxSmem) {
    Fail(Status::NotSupported("cuda EncoderAttention: a sequence of " + std::to_string(p.max_len) +
                              " tokens is longer than one block's shared memory holds"));
    return;
  }
  Use();
  cuda::LaunchEncoderAttention(q, k, v, seqs, n_seqs, p, out, S(stream_));
  CheckLaunch("EncoderAttention");
}

void CudaBackend::LayerNorm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
                            const float* bias, float eps, float* out) {
  Use();
  cuda::LaunchLayerNorm(x, rows, dim, stride, weight, bias, eps, out, S(stream_));
  CheckLaunch("LayerNorm");
}

void CudaBackend::Gelu(float* x, int64_t n) {
  Use();
  cuda::LaunchGelu(x, n, S(stream_));
  CheckLaunch("Gelu");
}

void CudaBackend::Tanh(float* x, int64_t n) {
  Use();
  cuda::LaunchTanh(x, n, S(stream_));
  CheckLaunch("Tanh");
}

void CudaBackend::TopKRouting(const float* logits, int64_t rows, int64_t n_experts, int64_t k, bool renormalize,
                              int32_t* ids, float* weights) {
  Use();
  cuda::LaunchTopKRouting(logits, rows, n_experts, k, renormalize, ids, weights, S(stream_));
  CheckLaunch("TopKRouting");
}

void CudaBackend::MoeFfn(const MoeExperts& ex, const float* x, int64_t n, const int32_t* ids, const float* weights,
                         int64_t k, std::span<const RowKind>, const MoeScratch& sc, float* out) {
  const int64_t E = static_cast<int64_t>(ex.gate.size()), H = ex.hidden, I = ex.inter;
  if (n <= 0 || E == 0) return;
  // The experts' weights as the kernels take them: gate[0..E), up[E..2E), down[2E..3E).
  std::vector<cuda::DevWeight> table(static_cast<size_t>(3 * E));
  for (int64_t i = 0; i < E; ++i) {
    const WeightMatrix* ws[3] = {ex.gate[i], ex.up[i], ex.down[i]};
    for (int m = 0; m < 3; ++m) {
      cuda::DevWeight& d = table[static_cast<size_t>(m * E + i)];
      const cuda::DevWeight& first = table[static_cast<size_t>(m * E)];
      if (!DevWeightOf(*ws[m], &d) || d.col_order != nullptr ||
          (i > 0 && (d.fmt != first.fmt || d.rows != first.rows || d.cols != first.cols))) {
        Fail(Status::InvalidArgument("cuda MoeFfn: a layer's experts must be weights prepared by this backend, "
                                     "of one format and shape, in input column order"));
        return;
      }
    }
  }
  const size_t table_bytes = table.size() * sizeof(cuda::DevWeight);
  if (moe_table_.bytes < table_bytes) {
    Free(moe_table_);
    auto t = Allocate(table_bytes, "moe expert table");
    if (!t.ok()) {
      Fail(t.status());
      return;
    }
    moe_table_ = *t;
  }
  CopyToDevice(moe_table_, 0, table.data(), table_bytes);  // pageable: staged before it returns
  Use();
  const auto* dt = moe_table_.as<const cuda::DevWeight>();
  const cudaStream_t s = S(stream_);
  cuda::LaunchSortSlots(ids, weights, n, k, E, sc.rows, sc.scales, s);
  cuda::LaunchFill(out, n * H, 0.0f, s);
  for (int64_t j = 0; j < k; ++j) {  // slot j of every token: its j-th expert in id order
    cuda::LaunchGroupedMatMul(table[0], dt, sc.rows + j, k, x, n, sc.gate, s);
    cuda::LaunchGroupedMatMul(table[E], dt + E, sc.rows + j, k, x, n, sc.up, s);
    cuda::LaunchGatedActivation(ex.activation, sc.gate, I, sc.up, I, n, I, sc.gate, I, s);
    cuda::LaunchGroupedMatMul(table[2 * E], dt + 2 * E, sc.rows + j, k, sc.gate, n, sc.y, s);
    cuda::LaunchSlotAccumulate(sc.y, n, H, sc.rows, sc.scales, k, j, out, s);
  }
  CheckLaunch("MoeFfn");
}

void CudaBackend::GatherRows(const float* src, int64_t cols, const int32_t* rows, int64_t n, float* dst) {
  Use();
  cuda::LaunchGatherRows(src, cols, rows, n, dst, S(stream_));
  CheckLaunch("GatherRows");
}

bool CudaBackend::PicksRows() const {
  // LLMHOST_CUDA_PICK_ROWS=off brings every row's logits back (A/B runs).
  return cuda::EnvSwitch("LLMHOST_CUDA_PICK_ROWS", true);
}

void CudaBackend::PickRows(const float* x, int64_t rows, int64_t cols, const RowPick* picks, int32_t* out) {
  Use();
  cuda::LaunchPickRows(x, rows, cols, picks, out, S(stream_));
  CheckLaunch("PickRows");
}

}  // namespace llmhost
