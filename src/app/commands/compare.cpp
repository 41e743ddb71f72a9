// glrecon compare: two volumes on one grid compared (the OS-EM paper's numbers: max, mean and RMS difference), per
// region, with a PNG of the difference.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/command.h"
#include "app/options.h"
#include "app/slice_files.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/roi.h"

namespace glrecon::app {
namespace {

struct Stats {
  std::size_t count = 0;
  double max = 0, sum = 0, squares = 0, sumA = 0, maxA = 0;
};

// |a - b| over the voxels of `region` (all without one).
Stats differences(const Image& ia, const Image& ib, const std::string& a, const std::string& b, const RegionOfInterest* region) {
  Stats s;
  for (std::size_t i = 0; i < ia.data.size(); ++i) {
    if (region && !region->mask[i]) continue;
    const double d = std::abs(static_cast<double>(ia.data[i]) - ib.data[i]);
    if (!std::isfinite(d)) throwInputError(std::isfinite(ia.data[i]) ? b : a, "voxel " + std::to_string(i), "a finite value", "NaN or infinity");
    ++s.count;
    s.max = std::max(s.max, d);
    s.sum += d;
    s.squares += d * d;
    s.sumA += std::abs(ia.data[i]);
    s.maxA = std::max(s.maxA, static_cast<double>(std::abs(ia.data[i])));
  }
  return s;
}

void print(const std::string& name, const Stats& s) {
  const double n = std::max<std::size_t>(1, s.count);
  std::printf("%-28s voxels %10zu  max |diff| %.6g  mean |diff| %.6g  RMS diff %.6g  (max |first| %.6g, mean |first| %.6g)\n",
              name.c_str(), s.count, s.max, s.sum / n, std::sqrt(s.squares / n), s.maxA, s.sumA / n);
}

class CompareCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("compare", "Compare two volumes on one grid: max, mean and RMS difference, per region, difference PNG");
    c->add_option("first", a, "First volume (.mha or .mhd), e.g. the cpu result")->required();
    c->add_option("second", b, "Second volume on the same grid, e.g. a GPU result")->required();
    c->add_option("--roi", rois, "Also report inside a region: cylinder:..., box:..., sphere:..., MASK.mha (repeatable)");
    c->add_option("--png", png, "Write |first - second| of one slice as a PNG (black 0, white the largest difference)");
    c->add_option("--slice", slice, "Slice of the PNG: AXIS or AXIS:INDEX (y slices are axial; default: the central axial slice)")->capture_default_str();
    c->add_flag("--overwrite", overwrite, "Replace an existing PNG");
    c->callback([this] { run(); });
  }

 private:
  std::string a, b, png, slice = "y";
  std::vector<std::string> rois;
  bool overwrite = false;

  void run() const {
    std::optional<SliceSpec> spec;
    if (!png.empty()) {
      checkOutputFile(png, {".png"}, overwrite, "--png");
      spec = parseSliceSpec("--slice", slice);
    }
    const Image ia = readImage(a), ib = readImage(b);
    checkSameGrid(ia, ib);
    const int index = spec ? sliceIndex("--slice", *spec, ia.size) : 0;
    std::vector<RegionOfInterest> regions;
    for (const std::string& r : rois) {
      if (r.rfind("fov", 0) == 0)
        throw UsageError("--roi: compare knows no scan geometry: expected cylinder:..., box:..., sphere:... or a mask file, found '" + r + "'");
      regions.push_back(makeRegionOfInterest(r, Geometry{}, ia.grid()));
    }
    print("whole volume", differences(ia, ib, a, b, nullptr));
    for (const RegionOfInterest& r : regions) print(r.description, differences(ia, ib, a, b, &r));
    if (spec) writeDifference(ia, ib, spec->axis, index);
  }

  void checkSameGrid(const Image& ia, const Image& ib) const {
    auto vec = [](auto v) { return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]); };
    if (ia.size != ib.size) throwInputError(b, "DimSize", vec(ia.size) + " (as " + a + ")", vec(ib.size));
    for (int k = 0; k < 3; ++k) {
      if (std::abs(ia.spacing[k] - ib.spacing[k]) > 1e-6 * std::abs(ia.spacing[k]))
        throwInputError(b, "ElementSpacing", vec(ia.spacing) + " (as " + a + ")", vec(ib.spacing));
      if (std::abs(ia.origin[k] - ib.origin[k]) > 1e-6 * std::max(1.0, std::abs(ia.origin[k])))
        throwInputError(b, "Offset", vec(ia.origin) + " (as " + a + ")", vec(ib.origin));
    }
  }

  // |first - second| of one slice, black 0, white the largest difference.
  void writeDifference(const Image& ia, const Image& ib, SliceAxis axis, int index) const {
    Image diff = ia;
    double maxDiff = 0;
    for (std::size_t i = 0; i < diff.data.size(); ++i) {
      diff.data[i] = std::abs(ia.data[i] - ib.data[i]);
      maxDiff = std::max(maxDiff, static_cast<double>(diff.data[i]));
    }
    writeSlicePng(png, diff, axis, index, 0.0, maxDiff > 0 ? maxDiff : 1.0, overwrite);
    std::fprintf(stderr, "wrote %s (white = %.6g)\n", png.c_str(), maxDiff);
  }
};

}  // namespace

std::unique_ptr<Command> makeCompareCommand() { return std::make_unique<CompareCommand>(); }

}  // namespace glrecon::app
