// The scan option groups (scan_options.h).
#include "scan_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>

#include "glrecon/errors.h"
#include "options.h"

namespace glrecon::app {

Geometry sampleScan(int projections, int detector) {
  CircularScanSpec spec;  // sid 1000, sdd 1536 by default
  spec.projections = projections;
  spec.nu = spec.nv = detector;
  spec.spacingU = spec.spacingV = 512.0 / detector;
  return makeCircularScan(spec);
}

void DetectorOptions::add(CLI::App* command, const std::string& pixelsHelp) {
  command->add_option("--detector", pixels, pixelsHelp)->capture_default_str();
  command->add_option("--detector-spacing", spacing, "Detector pixel spacing (mm): S or SU,SV")->capture_default_str();
}

DetectorLayout DetectorOptions::layout() const {
  const auto d = parseList("--detector", pixels, 2);
  for (double v : d)
    if (v < 1 || v != std::floor(v)) throw UsageError("--detector: expected positive whole pixel counts, found '" + pixels + "'");
  const auto ds = parseList("--detector-spacing", spacing, 2);
  for (double v : ds)
    if (!(v > 0)) throw UsageError("--detector-spacing: expected positive lengths in mm, found '" + spacing + "'");
  return DetectorLayout::centred(static_cast<int>(d[0]), static_cast<int>(d[1]), ds[0], ds[1]);
}

void CircularScanOptions::add(CLI::App* command) {
  command->add_option("--projections", projections, "Number of projections")->capture_default_str();
  command->add_option("--arc", arc, "Angular range in degrees covered by the projections")->capture_default_str();
  command->add_flag("--short-scan", shortScan, "Scan 180 degrees plus the fan angle (overrides --arc)");
  command->add_option("--first-angle", firstAngle, "Gantry angle of the first projection (degrees)")->capture_default_str();
  command->add_option("--sid", sid, "Source-to-isocentre distance (mm); with --parallel RTK's ray half-length")->capture_default_str();
  CLI::Option* sddOption = command->add_option("--sdd", sdd, "Source-to-detector distance (mm)")->capture_default_str();
  detector.add(command, "Detector pixels: N or NU,NV");
  command->add_option("--detector-offset", detectorOffset, "Detector offset (mm), RTK's ProjectionOffsetX,Y")->capture_default_str();
  CLI::Option* sourceOption =
      command->add_option("--source-offset", sourceOffset, "Source offset (mm), RTK's SourceOffsetX,Y")->capture_default_str();
  // --parallel has no source, so no source-to-detector distance, source offset or fan angle: those are refused beside it.
  command->add_flag("--parallel", parallel,
                    "Parallel beam (RTK's SourceToDetectorDistance 0): rays along the beam axis, the whole line")
      ->excludes(sddOption)
      ->excludes(sourceOption)
      ->excludes(command->get_option("--short-scan"));
  command->add_option("--out-of-plane", outOfPlane, "Out-of-plane (tilt) angle in degrees")->capture_default_str();
  command->add_option("--in-plane", inPlane, "In-plane (detector roll) angle in degrees")->capture_default_str();
}

Geometry CircularScanOptions::geometry() const {
  if (projections < 1) throw UsageError("--projections: expected at least 1, found " + std::to_string(projections));
  const DetectorLayout layout = detector.layout();
  const auto doff = parseList("--detector-offset", detectorOffset, 2), soff = parseList("--source-offset", sourceOffset, 2);
  if (!(sid > 0) || (!parallel && !(sdd > 0))) throw UsageError("--sid, --sdd: expected positive distances in mm");
  CircularScanSpec spec;
  spec.sid = sid;
  spec.sdd = parallel ? 0.0 : sdd;  // RTK's parallel geometry
  spec.projections = projections;
  spec.firstAngle = firstAngle;
  spec.nu = layout.nu;
  spec.nv = layout.nv;
  spec.spacingU = layout.spacingU;
  spec.spacingV = layout.spacingV;
  spec.projectionOffsetX = doff[0];
  spec.projectionOffsetY = doff[1];
  spec.sourceOffsetX = soff[0];
  spec.sourceOffsetY = soff[1];
  spec.outOfPlaneAngle = outOfPlane;
  spec.inPlaneAngle = inPlane;
  // A short scan's N projections span the needed arc from the first to the last one.
  spec.arc = shortScan ? shortScanArcDegrees(sdd, layout, doff[0]) * projections / std::max(1, projections - 1) : arc;
  return makeCircularScan(spec);
}

SampleScanOptions SampleScanOptions::withVolume(int size, int projections, int detector, int least) {
  return {size, projections, detector, least, least, least, true};
}

SampleScanOptions SampleScanOptions::scanOnly(int projections, int detector, int leastProjections, int leastDetector) {
  return {0, projections, detector, 0, leastProjections, leastDetector, false};
}

void SampleScanOptions::add(CLI::App* command) {
  if (hasSize) command->add_option("--size", size, "Volume size in voxels per axis (covering 256 mm)")->capture_default_str();
  command->add_option("--projections", projections, "Projections over 360 degrees")->capture_default_str();
  command->add_option("--detector", detector, "Detector pixels per axis (covering 512 mm)")->capture_default_str();
}

void SampleScanOptions::check() const {
  const struct {
    const char* option;
    int value, least;
    bool used;
  } values[] = {{"--size", size, leastSize, hasSize}, {"--projections", projections, leastProjections, true},
                {"--detector", detector, leastDetector, true}};
  for (const auto& v : values)
    if (v.used && v.value < v.least)
      throw UsageError(std::string(v.option) + ": expected at least " + std::to_string(v.least) + ", found " + std::to_string(v.value));
}

Geometry SampleScanOptions::geometry() const {
  check();
  return sampleScan(projections, detector);
}

VolumeGrid SampleScanOptions::grid() const {
  check();
  return VolumeGrid::centred({size, size, size}, glm::dvec3(256.0 / size));
}

}  // namespace glrecon::app
