// The projector factory: cpu always; graphics and compute where OpenGL 4.5 runs; cuda where built.
#include "glrecon/errors.h"
#include "glrecon/projector.h"
#include "operators/projector_backends.h"

namespace glrecon {

std::vector<std::string> availableProjectors() {
  std::vector<std::string> names = {"cpu", "graphics", "compute"};
  if (detail::cudaProjectorBuilt()) names.push_back("cuda");
  return names;
}

std::unique_ptr<Projector> makeProjector(const std::string& name, const Geometry& geometry, const VolumeGrid& grid,
                                         const ProjectorOptions& options) {
  if (name == "cpu") return std::make_unique<CpuProjector>(geometry, grid, options);
  if (name == "graphics" || name == "compute") return detail::makeGlProjector(name == "compute", geometry, grid, options);
  if (name == "cuda") return detail::makeCudaProjector(geometry, grid, options);
  std::string known;
  for (const std::string& n : availableProjectors()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError(field("backend") + ": expected one of " + known + ", found '" + name + "'");
}

}  // namespace glrecon
