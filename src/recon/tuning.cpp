#include "recon/tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <numeric>
#include <sstream>

#include "core/user_cache.h"
#include "device/cuda/device.h"
#include "glrecon/errors.h"
#include "glrecon/geometry.h"
#include "recon/device_session.h"

namespace glrecon {
namespace {

constexpr const char* kCacheFile = "backends.txt";

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &local);
  return text;
}

std::string formatRate(double updatesPerSecond) {
  std::ostringstream out;
  out.precision(3);
  out << updatesPerSecond * 1e-9;
  return out.str();
}

// "1.1x faster than cuda, 26x than graphics and 380x than cpu"
std::string comparison(const std::vector<BackendMeasurement>& fastestFirst) {
  std::string text;
  for (std::size_t i = 1; i < fastestFirst.size(); ++i) {
    const double ratio = fastestFirst[0].updatesPerSecond / std::max(fastestFirst[i].updatesPerSecond, 1e-30);
    std::ostringstream r;
    r.precision(ratio < 10 ? 2 : 3);
    r << ratio << "x " << (i == 1 ? "faster than " : "than ") << backendInfo(fastestFirst[i].backend).name;
    text += (i == 1 ? "" : i + 1 == fastestFirst.size() ? " and " : ", ") + r.str();
  }
  return text.empty() ? "the only backend that ran" : text;
}

std::string noteFor(const std::vector<BackendMeasurement>& fastestFirst, const std::string& deviceName, const std::string& date, int side) {
  return "auto: " + std::string(backendInfo(fastestFirst.front().backend).name) + " backend, " + comparison(fastestFirst) + " on " + deviceName +
         " (measured " + date + " at " + std::to_string(side) + "^3; " + field("retune") + " to redo)";
}

// "compute 2026-11-24 256 cuda=750 compute=800 ..." (the winner, the date, the stand-in's side, every rate in G/s).
std::string cacheValue(const std::vector<BackendMeasurement>& fastestFirst, const std::string& date, int side) {
  std::string value = std::string(backendInfo(fastestFirst.front().backend).name) + " " + date + " " + std::to_string(side);
  for (const BackendMeasurement& m : fastestFirst) value += " " + std::string(backendInfo(m.backend).name) + "=" + formatRate(m.updatesPerSecond);
  return value;
}

// The cache's line back into measurements (fastest first), its date and side; false where it does not parse or names a
// backend this build lacks.
bool parseCacheValue(const std::string& value, std::vector<BackendMeasurement>& fastestFirst, std::string& date, int& side) {
  std::istringstream in(value);
  std::string winner, entry;
  if (!(in >> winner >> date >> side)) return false;
  while (in >> entry) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) return false;
    const auto backend = backendNamed(entry.substr(0, eq));
    if (!backend || !backendInfo(*backend).built) return false;
    fastestFirst.push_back({*backend, std::atof(entry.c_str() + eq + 1) * 1e9});
  }
  return !fastestFirst.empty() && backendInfo(fastestFirst.front().backend).name == winner;
}

double timeBackend(Backend backend, int side, int device, DeviceSession& session) {
  CircularScanSpec spec;
  // The cpu backend's rate per update does not depend on the pass: fewer projections keep its measurement short.
  const int projections = backend == Backend::Cpu ? 8 : 32, warmUp = 4;
  spec.projections = projections;
  spec.nu = spec.nv = side;
  spec.spacingU = spec.spacingV = 512.0 / side;
  const Geometry geometry = makeCircularScan(spec);
  const VolumeGrid grid = VolumeGrid::centred({side, side, side}, glm::dvec3(256.0 / side));
  OperatorOptions options;
  options.device = device;
  // A fixed window: the GL search would cost passes of its own; 16 is near the best GL window on the GPUs measured.
  options.window = backend == Backend::Cuda ? backendInfo(backend).defaultWindow : 16;
  if (backendInfo(backend).usesDevice && backend != Backend::Cuda) options.context = &session.glContext(device);
  if (backend == Backend::Cuda) session.waitForCuda();
  auto op = makeOperator(backend, geometry, grid, options);
  const std::vector<float> ones(static_cast<std::size_t>(side) * side * projections, 1.0f);
  std::vector<std::size_t> views(projections);
  std::iota(views.begin(), views.end(), std::size_t{0});
  std::vector<float> volume(grid.voxelCount());
  // A warm-up pass (programs, lazy module loading, caches), then the timed one.
  op->back(ones.data(), views.data(), warmUp, Weighting::Fdk);
  op->readVolume(volume.data());
  op->reset();
  const auto start = std::chrono::steady_clock::now();
  op->back(ones.data(), views.data(), views.size(), Weighting::Fdk);
  op->readVolume(volume.data());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(grid.voxelCount()) * projections / std::max(seconds, 1e-9);
}

}  // namespace

int sizeClass(const VolumeGrid& grid) {
  const double side = std::cbrt(static_cast<double>(grid.voxelCount()));
  int size = 64;
  while (size < side && size < (1 << 20)) size *= 2;
  return size;
}

std::vector<BackendMeasurement> measureBackends(const std::vector<Backend>& candidates, int side, int device, DeviceSession& session) {
  std::vector<BackendMeasurement> measured;
  for (Backend backend : candidates) {
    try {
      measured.push_back({backend, timeBackend(backend, side, device, session)});
    } catch (const std::exception&) {
      // A backend that cannot run here (no memory, a driver's refusal) is not a candidate; a run that names it says why.
    }
  }
  std::stable_sort(measured.begin(), measured.end(), [](const auto& a, const auto& b) { return a.updatesPerSecond > b.updatesPerSecond; });
  return measured;
}

AutoChoice chooseBackend(const VolumeGrid& grid, DeviceSession& session, const AutoOptions& options) {
  AutoChoice choice;
  std::vector<Backend> candidates{Backend::Cpu};
  std::string deviceName, key, cpuReason;
  try {
    const gl::DeviceInfo& info = session.glContext(options.device).info();
    if (!info.software || options.measureSoftware) {
      for (Backend b : {Backend::Graphics, Backend::GraphicsMp, Backend::Compute}) candidates.push_back(b);
      deviceName = info.renderer;
      key = info.renderer + " | " + info.version;
    } else {
      cpuReason = "only a software renderer (" + info.renderer + ")";
    }
  } catch (const gl::GlError& e) {
    cpuReason = std::string("no usable OpenGL: ") + e.what();
  }
  if (cuda::built() && options.device < cuda::deviceCount()) {
    candidates.push_back(Backend::Cuda);
    const std::string name = cuda::deviceName(options.device);
    if (deviceName.empty()) deviceName = name;
    key += (key.empty() ? "" : " | ") + std::string("cuda ") + name + " " + cuda::driverVersion();
  }
  if (candidates.size() == 1) {
    choice.note = "auto: cpu backend, " + cpuReason;
    return choice;
  }
  const int sizeClassSide = sizeClass(grid);
  key += " | class " + std::to_string(sizeClassSide) + "^3";
  std::string date;
  int side = 0;
  if (!options.retune) {
    if (const auto value = rememberedValue(kCacheFile, key); value && parseCacheValue(*value, choice.measurements, date, side)) {
      choice.backend = choice.measurements.front().backend;
      choice.note = noteFor(choice.measurements, deviceName, date, side);
      return choice;
    }
    choice.measurements.clear();
  }
  side = std::min(sizeClassSide, options.largestStandIn);
  choice.measurements = measureBackends(candidates, side, options.device, session);
  choice.measured = true;
  if (choice.measurements.empty()) {
    choice.note = "auto: cpu backend, no backend ran the measurement";
    return choice;
  }
  date = today();
  choice.backend = choice.measurements.front().backend;
  const std::string value = cacheValue(choice.measurements, date, side);
  remember(kCacheFile, key, value);
  // The note from the figures as remembered (rounded), so that a later run's note reads the same.
  std::vector<BackendMeasurement> remembered;
  parseCacheValue(value, remembered, date, side);
  choice.note = noteFor(remembered, deviceName, date, side);
  return choice;
}

}  // namespace glrecon
