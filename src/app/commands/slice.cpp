// glrecon slice: one slice of any volume as a PNG image.
#include <CLI/CLI.hpp>

#include <iostream>

#include "app/command.h"
#include "app/options.h"
#include "app/slice_files.h"
#include "glrecon/io.h"

namespace glrecon::app {
namespace {

class SliceCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("slice", "Write one slice of a volume as a PNG image");
    c->add_option("--input,-i", input, "Volume (.mha, .mhd or .tif)")->required();
    c->add_option("--output,-o", output, "PNG file")->required();
    c->add_option("--axis", axis, "x, y or z (y slices are axial: x across, z up)")->capture_default_str();
    c->add_option("--index", index, "Voxel index along the axis (default: the central slice)");
    range.add(c, "--range", "Grey range LOW:HIGH, i.e. level -/+ window/2 (default: 0.5 and 99.5 percentiles)");
    c->add_flag("--overwrite", overwrite, "Replace an existing PNG");
    c->callback([this] { run(); });
  }

 private:
  std::string input, output, axis = "y";
  RangeOption range;
  int index = -1;
  bool overwrite = false;

  void run() const {
    const SliceAxis a = parseSliceAxis(axis);
    const auto r = range.range();
    checkOutputFile(output, {".png"}, overwrite, "--output");
    const Image volume = readImage(input);
    const int i = index >= 0 ? index : volume.size[axisNumber(a)] / 2;
    const auto grey = r ? *r : percentileRange(volume, 0.5, 99.5);
    writeSlicePng(output, volume, a, i, grey.first, grey.second, overwrite);
    std::cerr << "wrote " << output << " (" << axis << " = " << i << ", grey " << grey.first << " to " << grey.second << ")\n";
  }
};

}  // namespace

std::unique_ptr<Command> makeSliceCommand() { return std::make_unique<SliceCommand>(); }

}  // namespace glrecon::app
