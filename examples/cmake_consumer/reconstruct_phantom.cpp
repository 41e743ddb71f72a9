// glrecon as a library: simulate a small Shepp-Logan scan and reconstruct it with FDK on the CPU backend (any backend
// name works the same: "compute", "cuda" ...), then print the density at the centre (the phantom's brain: 1.02).
#include <cstdio>

#include "glrecon/fdk.h"
#include "glrecon/phantom.h"

int main() {
  glrecon::CircularScanSpec spec;
  spec.projections = 60;
  spec.nu = spec.nv = 64;
  spec.spacingU = spec.spacingV = 8.0;
  const glrecon::Geometry geometry = glrecon::makeCircularScan(spec);
  const glrecon::Image projections = glrecon::simulateScan(glrecon::Phantom::sheppLogan(), geometry, {});
  glrecon::FdkOptions options;
  options.backend = glrecon::backendNamed("cpu");
  const glrecon::VolumeGrid grid = glrecon::VolumeGrid::centred({32, 32, 32}, glm::dvec3(8.0));
  const glrecon::Image volume = glrecon::reconstructFdk(geometry, projections, grid, options);
  std::printf("centre %.3f\n", volume.at(16, 16, 16));
  return 0;
}
