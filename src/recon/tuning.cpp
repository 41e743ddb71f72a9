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
using Clock = std::chrono::steady_clock;

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &local);
  return text;
}

std::string significant(double value, int digits) {
  std::ostringstream out;
  out.precision(digits);
  out << value;
  return out.str();
}

// "2.1x faster than cuda, 26x than graphics and 380x than cpu"
std::string comparison(const std::vector<BackendMeasurement>& leastFirst) {
  std::string text;
  for (std::size_t i = 1; i < leastFirst.size(); ++i) {
    const double ratio = leastFirst[i].estimatedSeconds / std::max(leastFirst[0].estimatedSeconds, 1e-12);
    text += (i == 1 ? "" : i + 1 == leastFirst.size() ? " and " : ", ") + significant(ratio, ratio < 10 ? 2 : 3) + "x " +
            (i == 1 ? "faster than " : "than ") + backendInfo(leastFirst[i].backend).name;
  }
  return text.empty() ? "the only backend that ran" : text;
}

// CUDA's start always counts (the GL context is open for auto anyway: it names the device), also where this process
// has opened CUDA already (the measurement, an earlier run in Python): the choice depends on the problem and the
// remembered figures only, so the same command gets the same backend and the same bits, first run or later.
bool startCounts(const BackendMeasurement& m) { return m.backend == Backend::Cuda; }

std::string noteFor(const std::vector<BackendMeasurement>& leastFirst, const VolumeGrid& grid, std::size_t projections,
                    const std::string& deviceName, const std::string& date, int side) {
  std::string starts;
  for (const BackendMeasurement& m : leastFirst)
    if (startCounts(m)) starts = ", cuda's start of " + significant(m.startSeconds, 2) + " s included";
  return "auto: " + std::string(backendInfo(leastFirst.front().backend).name) + " backend, " + comparison(leastFirst) + " on " + deviceName +
         " for " + std::to_string(grid.size[0]) + "x" + std::to_string(grid.size[1]) + "x" + std::to_string(grid.size[2]) + " from " +
         std::to_string(projections) + " projections (estimated from rates measured " + date + " at " + std::to_string(side) + "^3" + starts +
         "; " + field("retune") + " to redo)";
}

// "2026-11-24 256 cpu=6.1e9,2e-9,0 cuda=9.6e11,1.1e-9,0.21 ..." (the date, the stand-in's side, per backend its rate,
// fixed seconds per voxel and start seconds).
std::string cacheValue(const std::vector<BackendMeasurement>& measured, const std::string& date, int side) {
  std::string value = date + " " + std::to_string(side);
  for (const BackendMeasurement& m : measured)
    value += " " + std::string(backendInfo(m.backend).name) + "=" + significant(m.updatesPerSecond, 4) + "," +
             significant(m.fixedSecondsPerVoxel, 4) + "," + significant(m.startSeconds, 3);
  return value;
}

// The cache's line back into measurements, its date and side; false where it does not parse or names a backend this
// build lacks (measured again then).
bool parseCacheValue(const std::string& value, std::vector<BackendMeasurement>& measured, std::string& date, int& side) {
  std::istringstream in(value);
  std::string entry;
  if (!(in >> date >> side)) return false;
  while (in >> entry) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) return false;
    const auto backend = backendNamed(entry.substr(0, eq));
    if (!backend || !backendInfo(*backend).built) return false;
    BackendMeasurement m;
    m.backend = *backend;
    char comma1 = 0, comma2 = 0;
    std::istringstream numbers(entry.substr(eq + 1));
    if (!(numbers >> m.updatesPerSecond >> comma1 >> m.fixedSecondsPerVoxel >> comma2 >> m.startSeconds) || comma1 != ',' || comma2 != ',' ||
        !(m.updatesPerSecond > 0))
      return false;
    measured.push_back(m);
  }
  return !measured.empty();
}

BackendMeasurement timeBackend(Backend backend, int side, int device, DeviceSession& session) {
  // Few and more projections: the difference gives the rate, the rest the fixed cost.
  const int few = backend == Backend::Cpu ? 2 : 8, many = 136;
  CircularScanSpec spec;
  spec.projections = many;
  spec.nu = spec.nv = side;
  spec.spacingU = spec.spacingV = 512.0 / side;
  const Geometry geometry = makeCircularScan(spec);
  const VolumeGrid grid = VolumeGrid::centred({side, side, side}, glm::dvec3(256.0 / side));
  BackendMeasurement m;
  m.backend = backend;
  OperatorOptions options;
  options.device = device;
  // A fixed window: the GL search would cost passes of its own; 16 is near the best GL window on the GPUs measured.
  options.window = backend == Backend::Cuda ? backendInfo(backend).defaultWindow : 16;
  if (backendInfo(backend).usesDevice && backend != Backend::Cuda) {
    options.context = &session.glContext(device);
    m.startSeconds = session.glOpenSeconds();
  }
  if (backend == Backend::Cuda) {
    session.openCuda(device);
    m.startSeconds = session.cudaOpenSeconds();
  }
  auto op = makeOperator(backend, geometry, grid, options);
  const std::vector<float> ones(static_cast<std::size_t>(side) * side * many, 1.0f);
  std::vector<std::size_t> views(many);
  std::iota(views.begin(), views.end(), std::size_t{0});
  std::vector<float> volume(grid.voxelCount());
  const auto pass = [&](int count) {
    op->reset();
    const auto start = Clock::now();
    op->back(ones.data(), views.data(), static_cast<std::size_t>(count), Weighting::Fdk);
    op->readVolume(volume.data());
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  pass(4);  // a warm-up (programs, lazy module loading, caches)
  const double voxels = static_cast<double>(grid.voxelCount());
  const double tFew = std::min(pass(few), pass(few));
  // Enough projections beyond `few` for about 40 ms more at the rate the few suggest (at most `many`): a slow backend
  // (the raster path on a datacenter GPU, the cpu) is not kept long, a fast one long enough to time well.
  const double roughRate = voxels * few / std::max(tFew, 1e-9);
  const int more = std::clamp(static_cast<int>(0.04 * roughRate / voxels), 8, many - few);
  const double tMany = std::min(pass(few + more), pass(few + more));
  const int manyUsed = few + more;
  m.updatesPerSecond = tMany > tFew ? voxels * more / (tMany - tFew) : voxels * manyUsed / std::max(tMany, 1e-9);
  m.fixedSecondsPerVoxel = std::max(0.0, tFew - voxels * few / m.updatesPerSecond) / voxels;
  return m;
}

// Least estimated time first, for `projections` into `grid`, CUDA's start included.
void estimate(std::vector<BackendMeasurement>& measured, const VolumeGrid& grid, std::size_t projections) {
  const double voxels = static_cast<double>(grid.voxelCount());
  for (BackendMeasurement& m : measured) {
    m.estimatedSeconds = (startCounts(m) ? m.startSeconds : 0.0) + m.fixedSecondsPerVoxel * voxels + voxels * static_cast<double>(projections) / m.updatesPerSecond;
  }
  std::stable_sort(measured.begin(), measured.end(), [](const auto& a, const auto& b) { return a.estimatedSeconds < b.estimatedSeconds; });
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
      measured.push_back(timeBackend(backend, side, device, session));
    } catch (const std::exception&) {
      // A backend that cannot run here (no memory, a driver's refusal) is not a candidate; a run that names it says why.
    }
  }
  return measured;
}

AutoChoice chooseBackend(const VolumeGrid& grid, std::size_t projections, DeviceSession& session, const AutoOptions& options) {
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
  // CUDA is a candidate wherever it is built: whether a device exists is learned when measuring (a failed measurement
  // leaves it out). The GL version names the driver, CUDA's too on NVIDIA's; asking CUDA would cost its start.
  if (cuda::built() && !key.empty() && !options.glOnly) {
    candidates.push_back(Backend::Cuda);
    key += " | with cuda";
  }
  if (candidates.size() == 1) {
    choice.note = "auto: cpu backend, " + cpuReason;
    return choice;
  }
  const int sizeClassSide = sizeClass(grid);
  key += " | class " + std::to_string(sizeClassSide) + "^3";
  std::string date;
  int side = 0;
  if (options.retune || !parseCacheValue(rememberedValue(kCacheFile, key).value_or(""), choice.measurements, date, side)) {
    choice.measurements.clear();
    side = std::min(sizeClassSide, options.largestStandIn);
    choice.measurements = measureBackends(candidates, side, options.device, session);
    choice.measured = true;
    if (choice.measurements.empty()) {
      choice.note = "auto: cpu backend, no backend ran the measurement";
      return choice;
    }
    date = today();
    const std::string value = cacheValue(choice.measurements, date, side);
    remember(kCacheFile, key, value);
    // The figures as remembered (rounded), so that a later run's note reads the same.
    choice.measurements.clear();
    parseCacheValue(value, choice.measurements, date, side);
  }
  estimate(choice.measurements, grid, projections);
  choice.backend = choice.measurements.front().backend;
  choice.note = noteFor(choice.measurements, grid, projections, deviceName, date, side);
  return choice;
}

}  // namespace glrecon
