// The shared option groups and value parsers (options.h): each option's text is parsed and checked here only.
#include "options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <sstream>

#include "glrecon/cluster.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/parse.h"

namespace glrecon::app {
namespace {

constexpr const char* kWindowExpected = "a whole number from 1 to 4096, max or auto";

// The window `text` stands for, or nothing when it is not N (1 to 4096), max or auto.
std::optional<int> windowValue(const std::string& text) {
  if (text == "auto") return 0;
  if (text == "max") return kMaximumWindow;
  char* end = nullptr;
  const double w = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(w >= 1 && w <= 4096) || w != std::floor(w)) return std::nullopt;
  return static_cast<int>(w);
}

}  // namespace

// The library names request fields in its messages (glrecon/errors.h); the command line shows them as its options:
// camelCase becomes --kebab-case (gpuMemory: --gpu-memory, noiseI0: --noise-i0).
std::string optionName(const std::string& field) {
  std::string option = "--";
  for (char c : field) {
    if (c >= 'A' && c <= 'Z') {
      option += '-';
      option += static_cast<char>(c - 'A' + 'a');
    } else {
      option += c;
    }
  }
  return option;
}

std::vector<double> parseList(const std::string& option, const std::string& text, std::size_t axes) {
  std::vector<double> values = parseNumberList(option, text);
  if (values.size() == 1) values.assign(axes, values[0]);
  if (values.size() != axes)
    throw UsageError(option + ": expected 1 or " + std::to_string(axes) + " comma-separated values, found '" + text + "'");
  return values;
}

std::pair<double, double> parseRange(const std::string& option, const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw UsageError(option + ": expected LOW:HIGH, found '" + text + "'");
  const auto lo = parseList(option, text.substr(0, colon), 1)[0], hi = parseList(option, text.substr(colon + 1), 1)[0];
  if (!(hi > lo)) throw UsageError(option + ": expected LOW < HIGH, found '" + text + "'");
  return {lo, hi};
}

int parseWindow(const std::string& option, const std::string& text) {
  if (const std::optional<int> window = windowValue(text)) return *window;
  throw UsageError(option + ": expected " + kWindowExpected + ", found '" + glrecon::quoted(text) + "'");
}

std::optional<Backend> parseBackend(const std::string& option, const std::string& text, bool allowAuto) {
  if (allowAuto && text == "auto") return std::nullopt;
  const std::optional<Backend> backend = backendNamed(text);
  if (backend && backendInfo(*backend).built) return backend;
  std::string known;
  for (Backend b : builtBackends()) known += std::string(backendInfo(b).name) + ", ";
  if (backend)
    throw UsageError(option + " " + text + ": this build has no " + text + " backend (CMake found no CUDA compiler; build with nvcc on the PATH)");
  if (allowAuto) throw UsageError(option + ": expected one of " + known + "auto; found '" + glrecon::quoted(text) + "'");
  known.resize(known.size() - 2);
  throw UsageError(option + ": expected one of " + known + ", found '" + glrecon::quoted(text) + "'");
}

std::vector<int> parseGpuList(const std::string& option, const std::string& text, const std::string& backend) {
  if (text == "all") {
    const std::optional<Backend> named = backendNamed(backend == "auto" ? "graphics" : backend);
    const int count = named ? deviceCount(*named) : 0;
    if (count < 1) throw UsageError(option + ": expected a device for the " + backend + " backend, found none");
    std::vector<int> all(count);
    for (int i = 0; i < count; ++i) all[i] = i;
    return all;
  }
  std::vector<int> list;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || end != item.c_str() + item.size() || value < 0 || value > 1023 || list.size() >= 64)
      throw UsageError(option + ": expected a device index from 0 (see glrecon devices), a list such as 0,1, or all, found '" +
                       glrecon::quoted(text) + "'");
    list.push_back(static_cast<int>(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return list;
}

void refuseMissingDirectory(const std::string& output) {
  const std::filesystem::path p(output);
  if (p.has_parent_path() && !std::filesystem::is_directory(p.parent_path()))
    throwInputError(output, "output directory", "an existing directory", p.parent_path().string());
}

std::string mhdDataPath(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension == ".mhd" ? std::filesystem::path(path).replace_extension(".raw").string() : std::string();
}

void CommandOutputs::add(const std::string& path, const std::vector<std::string>& extensions, const std::string& field) {
  if (path.empty()) return;
  checkOutputFile(path, extensions, overwrite_, field);
  addChecked(path, field);
  const std::string data = mhdDataPath(path);
  if (!data.empty()) {
    refuseToOverwrite(data, overwrite_);
    addChecked(data, field + " (its data file)");
  }
}

void CommandOutputs::addChecked(const std::string& path, const std::string& field) {
  namespace fs = std::filesystem;
  std::error_code error;
  // The name as the file system resolves it: relative parts and symbolic links of existing folders followed.
  fs::path key = fs::weakly_canonical(fs::absolute(path), error);
  if (error) key = fs::absolute(path).lexically_normal();
  for (const Planned& other : planned_) {
    bool same = key.string() == other.key;
    if (!same && fs::exists(path, error) && fs::exists(other.path, error)) same = fs::equivalent(path, other.path, error);
    if (same)
      throwInputError(path, field, "a file no other output of this command writes",
                      "the same file as " + other.field + " (" + other.path + ")");
  }
  planned_.push_back({path, field, key.string()});
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

void VolumeGridOptions::add(CLI::App* command) {
  command->add_option("--size,--dimension", size, "Volume size in voxels: N or NX,NY,NZ")->capture_default_str();
  command->add_option("--spacing", spacing, "Voxel spacing in mm: S or SX,SY,SZ")->capture_default_str();
  command->add_option("--origin", origin, "World position (mm) of voxel (0,0,0): X,Y,Z (default: volume centred on the origin)");
}

VolumeGrid VolumeGridOptions::grid() const {
  const auto s = parseList("--size", size, 3);
  std::array<int, 3> n{};
  for (int a = 0; a < 3; ++a) {
    if (s[a] < 1 || s[a] != std::floor(s[a]) || s[a] > 65536)
      throw UsageError("--size: expected positive whole numbers of voxels, found '" + size + "'");
    n[a] = static_cast<int>(s[a]);
  }
  const auto sp = parseList("--spacing", spacing, 3);
  for (double v : sp)
    if (!(v > 0)) throw UsageError("--spacing: expected positive lengths in mm, found '" + spacing + "'");
  VolumeGrid grid = VolumeGrid::centred(n, {sp[0], sp[1], sp[2]});
  if (!origin.empty()) {
    const auto o = parseList("--origin", origin, 3);
    grid.origin = {o[0], o[1], o[2]};
  }
  return grid;
}

void WindowOption::add(CLI::App* command, const std::string& help) {
  command->add_option("--window", text, help)->capture_default_str();
}

// Checked as the command line is parsed (a usage error before anything runs), with parseWindow's rule and words.
void WindowListOption::add(CLI::App* command, const std::string& help) {
  command->add_option("--window", text, help)
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            std::stringstream in(value);
            std::string item;
            while (std::getline(in, item, ','))
              if (!windowValue(item)) return std::string("expected ") + kWindowExpected + ", found '" + glrecon::quoted(item) + "'";
            return {};
          },
          "", "windows"));
}

std::vector<std::pair<std::string, int>> WindowListOption::windows() const {
  std::vector<std::pair<std::string, int>> list;
  for (const std::string& item : splitList(text)) list.emplace_back(item, parseWindow("--window", item));
  return list;
}

void RangeOption::add(CLI::App* command, const std::string& optionName, const std::string& help) {
  name = optionName;
  command->add_option(optionName, text, help);
}

std::optional<std::pair<double, double>> RangeOption::range() const {
  if (text.empty()) return std::nullopt;
  return parseRange(name, text);
}

void BackendOption::add(CLI::App* command, const std::string& help) {
  command->add_option("--backend", text, help)->capture_default_str();
}

// The iterative commands' --backend: cpu, graphics, compute or cuda (graphics-mp differs from graphics in Fdk back only).
Backend BackendOption::projector() const {
  const std::optional<Backend> backend = text == "graphics-mp" ? std::nullopt : backendNamed(text);
  if (backend) return *parseBackend("--backend", text, false);
  std::string known;
  for (Backend b : builtBackends())
    if (b != Backend::GraphicsMp) known += (known.empty() ? "" : ", ") + std::string(backendInfo(b).name);
  throw UsageError("--backend: expected one of " + known + ", found '" + glrecon::quoted(text) + "'");
}

std::string BackendOption::projectorHelp() {
  std::string names;
  for (Backend b : builtBackends())
    if (b != Backend::GraphicsMp) names += (names.empty() ? "" : ", ") + std::string(backendInfo(b).name);
  return "Operator backend: " + names;
}

void GpuListOption::add(CLI::App* command, const std::string& help) {
  command->add_option("--gpu", text, help)->capture_default_str();
}

void ProjectorOptions::add(CLI::App* command, bool several) {
  severalDevices = several;
  backend.add(command, BackendOption::projectorHelp());
  command->add_option("--gpu", gpu,
                      several ? "GPU backends: device index; cuda: a list such as 0,1 or all, each device holding slabs of the volume (--slabs)"
                              : "GPU backends: device index")
      ->capture_default_str();
  command->add_option("--threads", threads, "cpu backend: threads (0: all)")->capture_default_str();
  command->add_option("--step", step, "Forward projection's ray-marching step in mm (0: one sample per voxel plane, Joseph's)")->capture_default_str();
}

void ProjectorOptions::addPair(CLI::App* command) {
  command->add_option("--projector", pair,
                      "Projector pair: interpolating (fast; B close to A^T), matched (B = A^T exactly, CGLS's assumption) or "
                      "distance-driven (B = A^T, modelling the pixels' and voxels' size; a gantry about y)")
      ->check(CLI::IsMember({"interpolating", "matched", "distance-driven"}))
      ->capture_default_str();
}

std::vector<int> ProjectorOptions::devices() const {
  const std::vector<int> list = parseGpuList("--gpu", gpu, backend.text);
  if (!severalDevices && list.size() > 1)
    throw UsageError("--gpu: expected one device index for this command, found '" + glrecon::quoted(gpu) + "'");
  return list;
}

OperatorOptions ProjectorOptions::operatorOptions() const {
  OperatorOptions options;
  options.pair = parseProjectorPair(pair);
  options.device = devices().front();
  options.threads = threads;
  options.step = step;
  return options;
}

void IterativeParameters::addStoppingRules(CLI::App* command) {
  command->add_option("--stop-residual", stopResidual, "Stop once the residual is at most this fraction of ||b|| (0: off)")
      ->capture_default_str();
  command->add_option("--stop-change", stopChange, "Stop once an iteration lowers the residual by less than this fraction of it (0: off)")
      ->capture_default_str();
}

void IterativeParameters::addOrder(CLI::App* command) {
  command->add_option("--order", order,
                      "Subset order: interleaved (view v in subset v mod S, subsets in bit-reversed order), ordered (blocks of "
                      "consecutive views in view order: TIGRE's \"ordered\") or random (those blocks shuffled by --order-seed: TIGRE's \"random\")")
      ->capture_default_str();
  orderSeedOption = command->add_option("--order-seed", orderSeed, "--order random: the shuffle's seed (the same seed, the same order)")
                        ->capture_default_str();
}

void IterativeParameters::addTotalVariation(CLI::App* command) {
  IterativeOptions& tv = totalVariation;
  command->add_option("--tv-steps", tv.tvSteps, "TV descent steps after each SART sweep")->capture_default_str();
  command->add_option("--tv-alpha", tv.tvAlpha, "First TV step length as a fraction of the sweep's change")->capture_default_str();
  command->add_option("--tv-reduction", tv.tvReduction, "TV step reduction where TV moved the volume more than --tv-ratio times the sweep")
      ->capture_default_str();
  command->add_option("--tv-ratio", tv.tvRatio, "Largest TV move relative to the sweep's change before the step shrinks")->capture_default_str();
  command->add_option("--lambda-reduction", tv.lambdaReduction, "Relaxation factor per iteration")->capture_default_str();
}

void IterativeParameters::addPositivity(CLI::App* command, const std::string& which) {
  positivityOption = command->add_flag("--positivity,!--no-positivity", positivity,
                                       (which.empty() ? std::string("Clamp") : which + "clamp") +
                                           " negative voxels to 0 after every update, or not (default: on for sart and sirt, as TIGRE's SART "
                                           "family; osem's rule keeps voxels positive anyway)");
}

void IterativeParameters::addPrimalDual(CLI::App* command) {
  IterativeOptions& tv = totalVariation;
  command->add_option("--tv-weight", tv.tvWeight, "TV weight relative to the data term (unitless: higher is smoother, 0 is least squares with x >= 0)")
      ->capture_default_str();
}

IterativeOptions IterativeParameters::options(IterativeMethod method) const {
  IterativeOptions options;
  options.method = method;
  options.iterations = iterations;
  options.subsets = subsets;
  options.lambda = lambda;
  if (positivityOption && positivityOption->count() > 0) options.positivity = positivity;
  options.order = parseSubsetOrder(order);
  if (orderSeedOption && orderSeedOption->count() > 0 && options.order != SubsetOrder::Random)
    throw UsageError("--order-seed: only with --order random (found --order " + order + ")");
  options.orderSeed = orderSeed;
  options.stopResidual = stopResidual;
  options.stopChange = stopChange;
  options.tvSteps = totalVariation.tvSteps;
  options.tvAlpha = totalVariation.tvAlpha;
  options.tvReduction = totalVariation.tvReduction;
  options.tvRatio = totalVariation.tvRatio;
  options.lambdaReduction = totalVariation.lambdaReduction;
  options.tvWeight = totalVariation.tvWeight;
  checkValue("iterations", iterations);
  return options;
}

void warnRanksShareOneDevice(const Cluster* cluster, Backend backend, std::size_t devicesGiven, int device) {
  if (!cluster || cluster->size() < 2 || cluster->localRank() != 1 || devicesGiven > 1 || !backendInfo(backend).usesDevice) return;
  int devices = 0;
  try {
    devices = deviceCount(backend);
  } catch (const std::exception&) {
    return;  // the run itself reports a device it cannot open
  }
  const std::string notice = sharedDeviceNotice(cluster->localRank(), cluster->localSize(), devicesGiven, devices, device,
                                                backendInfo(backend).name, backend == Backend::Cuda, cluster->host());
  if (!notice.empty()) std::fprintf(stderr, "glrecon: %s\n", notice.c_str());
}

std::optional<int> parseRanksPerDevice(const std::string& option, const std::string& text) {
  if (text == "auto") return std::nullopt;
  if (text == "all") return 0;
  int count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc{} || end != text.data() + text.size() || count < 1 || count > 1024)
    throw UsageError(option + ": expected auto, all or a count of 1 to 1024, found '" + text + "'");
  return count;
}

void addRanksPerDeviceOption(CLI::App* command, std::string& text) {
  command->add_option("--ranks-per-device", text,
                      "Under mpirun: at most this many ranks of a host drive one device, the others stand aside (their host's "
                      "working ranks take their cores); auto: 1 where the host has a CUDA GPU, all elsewhere; all: every rank works")
      ->capture_default_str();
}

namespace {

// Where --ranks-per-device is auto: one rank per device on a host with a CUDA GPU (every GPU backend runs on it there),
// every rank on one without (Mesa's software renderer is the CPU) and for the cpu backend.
int defaultRanksPerDevice(std::optional<Backend> backend) {
  if (backend == Backend::Cpu || !backendInfo(Backend::Cuda).built) return 0;
  try {
    return deviceCount(Backend::Cuda) > 0 ? 1 : 0;
  } catch (const std::exception&) {
    return 0;  // no driver: no GPU
  }
}

// "1, 2, 3" or "1-3": ranks in increasing order.
std::string rankList(const std::vector<int>& ranks) {
  bool consecutive = ranks.size() > 3;
  for (std::size_t i = 1; i < ranks.size(); ++i) consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  if (consecutive) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

}  // namespace

RankRoles::RankRoles(Cluster* joined, std::optional<Backend> backend, int device, std::size_t devicesGiven, std::optional<int> perDevice,
                     bool speak)
    : joined_(joined), working_(joined) {
  if (!joined || joined->size() < 2) return;
  // A host's first rank works whatever the limit, so it leaves the CUDA driver's start to its own run, where it
  // overlaps the reading (FdkPlan opens the device beside it); the other ranks ask whether the host has a GPU.
  const int limit = perDevice ? *perDevice : joined->localRank() == 0 ? 1 : defaultRanksPerDevice(backend);
  const int own = backend == Backend::Cpu ? 0 : device;
  const std::vector<bool> works = ranksThatWork(joined->onThisHost(own), limit);
  const bool mine = works[static_cast<std::size_t>(joined->localRank())];
  someStandAside_ = joined->minimum(mine ? 1 : 0) == 0;
  if (!someStandAside_) {
    warnRanksShareOneDevice(joined, backend.value_or(backendInfo(Backend::Cuda).built ? Backend::Cuda : Backend::Graphics), devicesGiven, device);
    return;
  }
  // Rank 0 says who stands aside, and where the host has devices left unused (no --gpu list): --gpu all.
  std::string aside;
  if (!mine) {
    int devices = 0;
    if (devicesGiven <= 1 && backend != Backend::Cpu) try {
        devices = deviceCount(backend.value_or(Backend::Cuda));
      } catch (const std::exception&) {
      }
    aside = std::to_string(joined->rank()) + "\t" + joined->host() + "\t" + std::to_string(devices);
  }
  const std::vector<std::string> all = joined->gather(aside);
  kept_ = joined->keep(mine);
  working_ = kept_.get();
  if (!speak || joined->rank() != 0) return;
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  std::string unused;
  for (const std::string& line : all) {
    if (line.empty()) continue;
    const std::size_t tab = line.find('\t'), tab2 = line.find('\t', tab + 1);
    ranks.push_back(std::stoi(line.substr(0, tab)));
    const std::string host = line.substr(tab + 1, tab2 - tab - 1);
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    if (unused.empty() && std::stoi(line.substr(tab2 + 1)) > 1)
      unused = "; " + host + " has " + line.substr(tab2 + 1) + " devices: --gpu all gives each rank its own";
  }
  std::string where;
  for (const std::string& host : hosts) where += (where.empty() ? "" : ", ") + host;
  const std::string why = perDevice ? "--ranks-per-device " + std::to_string(limit)
                                    : "one rank drives each GPU, since ranks sharing a GPU are slower than one (--ranks-per-device all "
                                      "keeps every rank working)";
  std::fprintf(stderr, "glrecon: rank%s %s of %d stand%s aside (on %s): %s%s\n", ranks.size() > 1 ? "s" : "", rankList(ranks).c_str(),
               joined->size(), ranks.size() > 1 ? "" : "s", where.c_str(), why.c_str(), unused.c_str());
}

RankRoles::~RankRoles() {
  if (someStandAside_ && std::uncaught_exceptions() == 0) joined_->barrierIdly();
}

}  // namespace glrecon::app
