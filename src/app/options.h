#pragma once
// Option groups several commands share (volume grid, window, LO:HI range, backend, GPU list): each declares its options
// (add) and parses and validates them in one accessor, so the same text gives the same value and message everywhere.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "glrecon/grid.h"
#include "glrecon/iterative.h"
#include "glrecon/operator.h"

namespace CLI {
class App;
class Option;
}

namespace glrecon {
class Cluster;
}

namespace glrecon::app {

/// A library field name (glrecon/errors.h) as the command line's option: camelCase becomes --kebab-case.
std::string optionName(const std::string& field);

/// "256" or "256,256,128": one value for every axis, or one per axis (UsageError naming `option` otherwise).
std::vector<double> parseList(const std::string& option, const std::string& text, std::size_t axes);

/// "LOW:HIGH" with LOW < HIGH (UsageError naming `option` otherwise).
std::pair<double, double> parseRange(const std::string& option, const std::string& text);

/// "N" (1 to 4096), "max" or "auto": the library's window N, kMaximumWindow or 0. UsageError naming `option` otherwise.
int parseWindow(const std::string& option, const std::string& text);

/// --backend's value: a backend of this build, or (allowAuto) auto, as an empty optional. Throws UsageError naming
/// `option` and the backends known.
std::optional<Backend> parseBackend(const std::string& option, const std::string& text, bool allowAuto = true);

/// --gpu's value: an index, a list of indices ("0,1"; one may repeat, to test the slab queue on one device) or
/// "all" (every device the backend can use). Throws UsageError naming `option` for anything else.
std::vector<int> parseGpuList(const std::string& option, const std::string& text, const std::string& backend);
/// Under mpirun, where the ranks of a host all take one device (--gpu gave one) while `backend` has several there: a line
/// on stderr from the host's second rank naming --gpu all. Ranks sharing a GPU take turns on it (the measurement
/// script's mpirun left --gpu out and put both ranks on GPU 0 of two unnoticed).
void warnRanksShareOneDevice(const Cluster* cluster, Backend backend, std::size_t devicesGiven, int device);

/// --ranks-per-device's value: "auto", "all" or a count of 1 to 1024 (UsageError naming `option` otherwise); 0 for all,
/// nullopt for auto.
std::optional<int> parseRanksPerDevice(const std::string& option, const std::string& text);
/// Declares --ranks-per-device (fdk and the iterative methods), its text into `text`.
void addRanksPerDeviceOption(CLI::App* command, std::string& text);

/// Under mpirun: which ranks work and which stand aside (docs/cluster.md). On each host at most `perDevice` ranks drive
/// one device, the lowest local ranks first; the others read nothing and wait for the job's end without using a core,
/// and the working ranks of the host take their cores. By default (`perDevice` nullopt) one rank per device where the
/// host has a CUDA GPU and the backend uses a device (ranks sharing a GPU each read and filter their own rows and
/// backproject thinner slabs: +40% to +105% at 1024^3 on an H100), and every rank elsewhere (Mesa's renderer is the
/// CPU; the cpu backend's ranks split the cores). The cpu backend's one device is its host's processors.
/// A collective of `joined` (every rank calls it, at the same point, before any other collective of the command).
class RankRoles {
 public:
  RankRoles(Cluster* joined, std::optional<Backend> backend, int device, std::size_t devicesGiven, std::optional<int> perDevice, bool speak);
  /// Every rank waits here for the others where some stood aside (not while an exception unwinds: the failing rank
  /// stops the job, abortCluster).
  ~RankRoles();
  RankRoles(const RankRoles&) = delete;
  RankRoles& operator=(const RankRoles&) = delete;
  /// The cluster this rank works in: the job's own where every rank works, the working ranks' otherwise; nullptr
  /// without mpirun and on a rank that stands aside.
  Cluster* working() const { return working_; }
  bool standsAside() const { return joined_ && !working_; }

 private:
  Cluster* joined_ = nullptr;
  std::unique_ptr<Cluster> kept_;
  Cluster* working_ = nullptr;
  bool someStandAside_ = false;
};

/// An output file's directory must exist (InputError naming the file otherwise).
void refuseMissingDirectory(const std::string& output);

/// Every file one command will write, checked together before any work: each one's extension, directory and existing
/// file (checkOutputFile: replaced only with --overwrite), and no two of them the same file, by name or, where it
/// exists, through a link (`-o out.mha --residual-csv out.mha` would write the CSV over the volume). A .mhd brings its
/// .raw along.
class CommandOutputs {
 public:
  explicit CommandOutputs(bool overwrite) : overwrite_(overwrite) {}
  /// Checks `path` (given by option `field`; empty: nothing) and adds it.
  void add(const std::string& path, const std::vector<std::string>& extensions, const std::string& field);

 private:
  struct Planned {
    std::string path, field, key;
  };
  void addChecked(const std::string& path, const std::string& field);
  bool overwrite_;
  std::vector<Planned> planned_;
};

/// A .mhd's data file beside it ("" for the other formats).
std::string mhdDataPath(const std::string& path);

/// The non-empty items of a comma-separated list ("cpu,,cuda": cpu and cuda).
std::vector<std::string> splitList(const std::string& text);

/// --size/--dimension, --spacing, --origin (rtkfdk's names): "N" or "NX,NY,NZ" voxels, "S" or "SX,SY,SZ" mm, an
/// optional "X,Y,Z" origin (default: centred).
struct VolumeGridOptions {
  std::string size, spacing, origin;
  explicit VolumeGridOptions(std::string defaultSize = "256", std::string defaultSpacing = "1")
      : size(std::move(defaultSize)), spacing(std::move(defaultSpacing)) {}
  void add(CLI::App* command);
  VolumeGrid grid() const;
};

/// --window N|max|auto: GPU backends' projections per pass.
struct WindowOption {
  std::string text = "auto";
  void add(CLI::App* command, const std::string& help);
  int window() const { return parseWindow("--window", text); }
};

/// --window as a comma-separated list of N|max|auto (bench): each item checked as the command line is parsed.
struct WindowListOption {
  std::string text;
  explicit WindowListOption(std::string defaults) : text(std::move(defaults)) {}
  void add(CLI::App* command, const std::string& help);
  /// Each window as given ("8", "auto") and as the library takes it.
  std::vector<std::pair<std::string, int>> windows() const;
};

/// A grey range LOW:HIGH (--range, --slice-range); absent when not given.
struct RangeOption {
  std::string name, text;
  void add(CLI::App* command, const std::string& optionName, const std::string& help);
  bool given() const { return !text.empty(); }
  std::optional<std::pair<double, double>> range() const;
};

/// --backend: the FDK backends with auto, or the projector backends of the iterative methods.
struct BackendOption {
  std::string text;
  explicit BackendOption(std::string defaultName) : text(std::move(defaultName)) {}
  void add(CLI::App* command, const std::string& help);
  /// A backend of this build, or auto as an empty optional.
  std::optional<Backend> choice() const { return parseBackend("--backend", text); }
  /// A backend of this build, `whenAuto` for auto.
  Backend orWhenAuto(Backend whenAuto) const { return text == "auto" ? whenAuto : *parseBackend("--backend", text, false); }
  /// A backend with a projector pair (cpu, graphics, compute, cuda; no auto).
  Backend projector() const;
  /// "Operator backend: cpu, graphics, ..." for the iterative commands' --help.
  static std::string projectorHelp();
};

/// --gpu as one device, a list or all (fdk, bench).
struct GpuListOption {
  std::string text = "0";
  void add(CLI::App* command, const std::string& help);
  /// The devices for `backend` (a --backend value; all means the devices of that backend, of graphics for auto).
  std::vector<int> devices(const std::string& backend) const { return parseGpuList("--gpu", text, backend); }
};

/// --backend, --gpu, --threads, --step: the projector pair of project and the iterative methods.
struct ProjectorOptions {
  BackendOption backend{"cpu"};
  std::string gpu = "0";  ///< one device; the iterative methods (add(c, true)): a list or all, over which --slabs go
  int threads = 0;
  double step = 0.0;
  std::string pair = "interpolating";
  bool severalDevices = false;
  void add(CLI::App* command, bool severalDevices = false);
  /// --gpu's devices (one, unless several were allowed).
  std::vector<int> devices() const;
  /// --projector interpolating|matched: the iterative methods' pair.
  void addPair(CLI::App* command);
  OperatorOptions operatorOptions() const;
};

/// --iterations, --subsets, --order, --lambda, --positivity: the iterative methods' parameters (sart, sirt, cgls, osem and view).
/// Each command declares those it takes, with its own help; they become IterativeOptions here, checked before any work.
struct IterativeParameters {
  int iterations = 10, subsets = 0;
  double lambda = 0.0;
  bool positivity = true;                  // --positivity / --no-positivity (sart, sirt, osem and view)
  CLI::Option* positivityOption = nullptr;  // set by addPositivity: whether either was given (else the method's default)
  double stopResidual = 0.0, stopChange = 0.0;
  std::string order = "interleaved";  // --order: interleaved, ordered or random (parsed in options())
  std::uint64_t orderSeed = 0;        // --order-seed: random's seed
  CLI::Option* orderSeedOption = nullptr;  // set by addOrder: whether --order-seed was given
  IterativeOptions totalVariation;  // ASD-POCS's tv* and lambdaReduction, PDHG-TV's tvWeight (the library's defaults)
  /// --stop-residual and --stop-change, the same for every method.
  void addStoppingRules(CLI::App* command);
  /// --order interleaved|ordered|random and --order-seed (sart, osem, asd-pocs: the subset methods).
  void addOrder(CLI::App* command);
  /// ASD-POCS's --tv-steps, --tv-alpha, --tv-reduction, --tv-ratio, --lambda-reduction.
  void addTotalVariation(CLI::App* command);
  /// PDHG-TV's --tv-weight.
  void addPrimalDual(CLI::App* command);
  /// --positivity / --no-positivity (IterativeOptions::positivity: on by default for sart and sirt).
  void addPositivity(CLI::App* command, const std::string& which);
  IterativeOptions options(IterativeMethod method) const;
};

}  // namespace glrecon::app
