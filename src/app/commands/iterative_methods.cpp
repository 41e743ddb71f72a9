// glrecon sart, sirt, cgls, osem, asd-pocs, pdhg-tv: one command family (one class, the method its parameter) reconstructing from RTK files
// with the iterative methods over one projector pair, with the residual curve as CSV and PNG.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/command.h"
#include "app/options.h"
#include "app/residual_plot.h"
#include "glrecon/cluster.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/io.h"
#include "glrecon/iterative.h"
#include "glrecon/roi.h"
#include "glrecon/split.h"
#include "glrecon/validate.h"

namespace glrecon::app {
namespace {

const char* about(IterativeMethod method) {
  return method == IterativeMethod::Sart   ? "Reconstruct with SART / OS-SART (additive, ordered subsets; --subsets 1 is SIRT)"
         : method == IterativeMethod::Sirt ? "Reconstruct with SIRT (additive, all projections at once)"
         : method == IterativeMethod::Cgls ? "Reconstruct with CGLS (conjugate gradients on the least-squares problem)"
         : method == IterativeMethod::Osem ? "Reconstruct with OS-EM (multiplicative, positive data; --subsets 1 is MLEM)"
         : method == IterativeMethod::AsdPocs
             ? "Reconstruct with ASD-POCS (SART sweeps with x >= 0 and total-variation descent: few views)"
             : "Reconstruct with PDHG-TV (Chambolle-Pock: least squares + total variation, x >= 0; few views, noise; --projector matched)";
}

class IterativeMethodCommand final : public Command {
 public:
  explicit IterativeMethodCommand(IterativeMethod m) : method(m) {}

  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(methodName(method), about(method));
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file")->required();
    c->add_option("--projections,-p", projectionsPath, "Projections (line integrals): a stack, a directory or a glob")->required();
    c->add_option("--output,-o", output, "Output volume (.mha, .mhd or .tif)")->required();
    volume.add(c);
    // PDHG-TV converges in more, cheaper iterations than the others, and its guarantee asks for the matched pair.
    if (method == IterativeMethod::PdhgTv) {
      parameters.iterations = 300;
      projector.pair = "matched";
    }
    c->add_option("--iterations,-n", parameters.iterations, "Iterations (passes over all projections)")->capture_default_str();
    if (method == IterativeMethod::Sart || method == IterativeMethod::Osem || method == IterativeMethod::AsdPocs)
      c->add_option("--subsets", parameters.subsets,
                    method != IterativeMethod::Osem ? "Ordered subsets (1 to the number of projections; default: one projection per subset)"
                                                    : "Ordered subsets (1 to the number of projections; 1 is MLEM; default: 8)");
    if (method == IterativeMethod::Sart || method == IterativeMethod::Osem || method == IterativeMethod::AsdPocs) parameters.addOrder(c);
    if (method == IterativeMethod::Sart || method == IterativeMethod::Sirt || method == IterativeMethod::AsdPocs)
      c->add_option("--lambda", parameters.lambda, "Relaxation in (0, 2) (default: 0.8 with one projection per subset, else 1)");
    if (method == IterativeMethod::AsdPocs) parameters.addTotalVariation(c);
    if (method == IterativeMethod::PdhgTv) parameters.addPrimalDual(c);
    if (method != IterativeMethod::Cgls && method != IterativeMethod::AsdPocs && method != IterativeMethod::PdhgTv) parameters.addPositivity(c, "");
    parameters.addStoppingRules(c);
    c->add_option("--initial", initial, "Starting volume on the output grid (e.g. an FDK result; default: 0, osem: a positive constant)");
    c->add_option("--roi", roi, "Reconstruct only a region (voxels outside stay 0): fov, fov-cylinder, cylinder:..., box:..., sphere:..., MASK.mha");
    projector.add(c, /*severalDevices=*/true);
    projector.addPair(c);
    c->add_option("--slabs", slabs,
                  "Cut the volume into N slabs of y rows, each its own operator (cpu, cuda): on the --gpu devices in turn, and under "
                  "mpirun on consecutive ranks (default: one per rank and device); the same slabs give the same result on any "
                  "number of ranks")
        ->check(CLI::Range(1, 1 << 20));
    addRanksPerDeviceOption(c, ranksPerDevice);
    c->add_option("--residual-csv", residualCsv, "Write the residual curve as CSV (iteration, subsets, residual, relative, seconds; a .csv name)");
    c->add_option("--residual-png", residualPng, "Write the residual curve as a PNG chart (log scale; a .png name)");
    c->add_flag("--overwrite", overwrite, "Replace existing output files");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->callback([this] { run(); });
  }

 private:
  IterativeMethod method;
  std::string geometryPath, projectionsPath, output, roi, initial, residualCsv, residualPng, ranksPerDevice = "auto";
  VolumeGridOptions volume;
  ProjectorOptions projector;
  IterativeParameters parameters;
  bool overwrite = false, quiet = false;
  int slabs = 0;

  void run() const {
    // Under mpirun every rank computes the same iterates from the same sums (glrecon/split.h); rank 0 alone speaks and
    // writes. Ranks beyond one per GPU of their host stand aside (RankRoles) and wait for the others.
    Cluster* const joined = currentCluster();
    IterativeOptions options = parameters.options(method);
    const Backend chosen = projector.backend.projector();  // before any reading: a bad name costs nothing
    std::vector<int> devices = projector.devices();
    const std::size_t devicesGiven = devices.size();
    // Under mpirun one device per rank, the ranks of a host sharing its devices out by their place on it (as fdk's).
    if (joined && joined->size() > 1) devices = {devices[static_cast<std::size_t>(joined->localRank()) % devices.size()]};
    const RankRoles roles(joined, chosen, devices.front(), devicesGiven, parseRanksPerDevice("--ranks-per-device", ranksPerDevice),
                          !this->quiet);
    if (roles.standsAside()) return;  // ~RankRoles waits for the working ranks
    Cluster* const cluster = roles.working();
    const bool ranks = cluster && cluster->size() > 1, speaker = !cluster || cluster->rank() == 0;
    const bool quiet = this->quiet || !speaker;
    const VolumeGrid grid = volume.grid();
    // Every output, before any reading: formats, folders, existing files and each against the others.
    CommandOutputs outputs(overwrite);
    outputs.add(output, {".mha", ".mhd", ".tif", ".tiff"}, "--output");
    outputs.add(residualCsv, {".csv"}, "--residual-csv");
    outputs.add(residualPng, {".png"}, "--residual-png");
    const Image projections = readProjectionStack(projectionsPath);
    const Geometry geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), detectorLayoutOf(projections));
    checkProjectionData(geometry, projections, projectionsPath);
    Image initialVolume;
    if (!initial.empty()) {
      initialVolume = readImage(initial);
      options.initial = &initialVolume;
    }
    if (!roi.empty()) options.mask = makeRegionOfInterest(roi, geometry, grid).mask;
    std::unique_ptr<ConeBeamOperator> op;
    // One slab on one device of one process is the whole grid's operator itself (no sums to form across slabs).
    SplitOptions split;
    split.parts = slabs;
    split.devices = devices;
    split.cluster = ranks ? cluster : nullptr;
    op = makeOperatorOrSplit(chosen, geometry, grid, projector.operatorOptions(), split);
    if (!quiet)
      std::fprintf(stderr, "%s: %d x %d x %d voxels from %zu projections of %d x %d, %s, %s\n", methodName(method), grid.size[0],
                   grid.size[1], grid.size[2], geometry.size(), geometry.detector.nu, geometry.detector.nv, op->description().c_str(),
                   raySamplingDescription(op->step()).c_str());
    IterativeReport report;
    const double norm = dataNorm(projections);
    const Image result = reconstructIterative(*op, geometry, projections, grid, options, &report,
                                              [&](const IterationRecord& r, IterativeReconstructor&) {
                                                if (quiet || r.subset != r.subsets) return;
                                                std::fprintf(stderr, "%s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n",
                                                             methodName(method), r.iteration, parameters.iterations, r.residual,
                                                             norm > 0 ? r.residual / norm : 0.0, r.seconds);
                                              });
    if (speaker) writeOutputs(result, report, backendInfo(op->backend()).name);
    if (!quiet) printSummary(report, op->timings(), norm);
    if (ranks) reportRanks(*cluster, *op, grid, splitParts(split, cluster->size()), !quiet);
    // Said even with --quiet: the file holds a result past its best.
    if (speaker && !report.warning.empty()) std::fprintf(stderr, "warning: %s\n", renderFields(report.warning, optionName).c_str());
  }

  // Each rank's slabs and the time in its operator, printed by rank 0 (a collective: every rank calls it).
  void reportRanks(Cluster& cluster, const ConeBeamOperator& op, const VolumeGrid& grid, int parts, bool print) const {
    const auto [first, last] = slabsOfRank(parts, cluster.size(), cluster.rank());
    const std::vector<int> rows = splitRows(grid.size[1], parts);
    const OperatorTimings t = op.timings();
    char line[256];
    std::snprintf(line, sizeof line, "  rank %d (%s): slabs %d-%d of %d (y rows %d-%d), forward %.2f s, back and updates %.2f s", cluster.rank(),
                  cluster.host().c_str(), first, last - 1, parts, rows[static_cast<std::size_t>(first)], rows[static_cast<std::size_t>(last)] - 1, t.forward, t.back);
    const std::vector<std::string> lines = cluster.gather(line);
    if (print)
      for (const std::string& l : lines) std::fprintf(stderr, "%s\n", l.c_str());
  }

  // " (ordered)", " (random, seed N)": the subset order where it is not the default interleaved one.
  std::string orderNote() const {
    if (parameters.order == "interleaved") return "";
    return " (" + parameters.order + (parameters.order == "random" ? ", seed " + std::to_string(parameters.orderSeed) : std::string()) + ")";
  }

  void writeOutputs(const Image& result, const IterativeReport& report, const std::string& backend) const {
    // A residual file that cannot be written takes the volume written before it along: a run leaves all, or nothing.
    RunOutputs written;
    written.track(output);
    if (!mhdDataPath(output).empty()) written.track(mhdDataPath(output));
    writeImage(output, result, overwrite);
    for (const std::string& path : {residualCsv, residualPng})
      if (!path.empty()) written.track(path);
    writeResidualFiles(residualCsv, residualPng, report,
                       std::string(methodName(method)) + " on " + backend + ", " + std::to_string(report.subsets) + " subset(s)" + orderNote(), overwrite);
    written.keep();
  }

  void printSummary(const IterativeReport& report, const OperatorTimings& timings, double norm) const {
    std::fprintf(stderr,
                 "%s: %d iterations, %d subset(s)%s, lambda %.3g: final residual %.6g (%.4g of ||b||); %.2f s (setup %.2f s; forward %.2f s, "
                 "back %.2f s)\n",
                 methodName(method), static_cast<int>(report.iterations.size()), report.subsets, orderNote().c_str(), report.lambda, report.finalResidual,
                 norm > 0 ? report.finalResidual / norm : 0.0, report.seconds, report.setupSeconds, timings.forward, timings.back);
    if (report.restarts > 0) std::fprintf(stderr, "%s: restarted %d time(s) where the conjugate direction stopped lowering the residual\n", methodName(method), report.restarts);
    if (!report.stopReason.empty())
      std::fprintf(stderr, "%s: stopped after %zu iterations: %s\n", methodName(method), report.iterations.size(),
                   renderFields(report.stopReason, optionName).c_str());
    std::fprintf(stderr, "wrote %s\n", output.c_str());
  }
};

}  // namespace

std::unique_ptr<Command> makeIterativeMethodCommand(IterativeMethod method) { return std::make_unique<IterativeMethodCommand>(method); }

}  // namespace glrecon::app
