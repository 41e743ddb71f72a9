// Builds without CUDA: the cuda projector reports that it is not built.
#include "operators/projector_backends.h"

namespace glrecon::detail {
bool cudaProjectorBuilt() { return false; }
std::unique_ptr<Projector> makeCudaProjector(const Geometry&, const VolumeGrid&, const ProjectorOptions&) {
  throw CudaError("cuda projector: this build has no CUDA backend (no CUDA compiler found)");
}
}  // namespace glrecon::detail
