#pragma once
// Constructors of the GPU projectors, internal to src/project (the factory in projectors.cpp uses them).
#include <memory>

#include "glrecon/projector.h"

namespace glrecon::detail {
/// graphics (compute = false) or compute (compute = true), in a headless EGL context on options.gpu.
std::unique_ptr<Projector> makeGlProjector(bool compute, const Geometry& geometry, const VolumeGrid& grid,
                                           const ProjectorOptions& options);
bool cudaProjectorBuilt();
/// Throws CudaError where the CUDA projector is not built or no device exists.
std::unique_ptr<Projector> makeCudaProjector(const Geometry& geometry, const VolumeGrid& grid, const ProjectorOptions& options);
}  // namespace glrecon::detail
