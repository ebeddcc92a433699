// MakeCollectives: the in-process stand-in for CPU backends, NCCL for GPUs.
#include "backend/collective.h"

#include <string>

#ifdef LLMHOST_HAVE_CUDA
#include "backend/cuda/nccl_collective.h"
#endif

namespace llmhost {

Result<std::vector<std::unique_ptr<Collective>>> MakeCollectives(std::span<Backend* const> backends) {
  if (backends.empty()) return Status::InvalidArgument("collectives: no backends (a group has one rank at least)");
  for (Backend* b : backends) {
    if (!b) return Status::InvalidArgument("collectives: a rank has no backend");
  }
  Backend* first = backends.front();
  for (Backend* b : backends) {
    if (b->kind() != first->kind()) {
      return Status::NotSupported("collectives: every rank must be on one kind of device (" + first->name() +
                                  " and " + b->name() + " are not)");
    }
  }
  const int size = static_cast<int>(backends.size());
  // One rank has nothing to exchange (AllReduceSum is a no-op): no NCCL.
  if (size == 1 || first->kind() == DeviceKind::kCpu) return MakeInProcessCollectives(size);
#ifdef LLMHOST_HAVE_CUDA
  return cuda::MakeNcclCollectives(backends);
#else
  return Status::NotSupported("collectives over " + first->name() + ": this build of llmhost has no CUDA backend");
#endif
}

}  // namespace llmhost
