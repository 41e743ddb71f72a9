#pragma once
// Helpers shared by the tests: a scratch directory per test, small file utilities.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sys/wait.h>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "device/gl/context.h"
#include "glrecon/filter.h"
#include "glrecon/operator.h"
#include "glrecon/parallel.h"
#include "test_config.h"

namespace glrecon::test {

/// Why no OpenGL 4.5 context can be made here ("" when one can): GL tests skip with it (CI has Mesa; a
/// machine without EGL devices has none). Probed once per process.
inline const std::string& glUnavailableReason() {
  static const std::string reason = [] {
    try {
      gl::Context::headless(0);
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

/// In a TEST body: skips it, saying why, where no OpenGL 4.5 device exists.
#define GLRECON_SKIP_WITHOUT_GL()                                                                          \
  do {                                                                                                     \
    if (const std::string reason = ::glrecon::test::glUnavailableReason(); !reason.empty()) \
      GTEST_SKIP() << "no OpenGL 4.5 device: " << reason;                                                  \
  } while (0)

/// A C-arm-like scan (1000 mm to the isocentre, 1536 mm to the detector) of `views` views on a square detector of
/// `pixels` pixels spanning `detectorMm`: small enough for llvmpipe.
inline Geometry circularScan(int views, int pixels, double detectorMm = 512.0) {
  CircularScanSpec spec;
  spec.projections = views;
  spec.nu = spec.nv = pixels;
  spec.spacingU = spec.spacingV = detectorMm / pixels;
  return makeCircularScan(spec);
}

/// A parallel-beam scan (ASTRA's parallel3d): `views` views over `arc` degrees (ASTRA's [0, pi) sampling by default) on
/// a square detector of `pixels` pixels spanning `detectorMm`, its centre on the rotation axis.
inline Geometry parallelScan(int views, int pixels, double detectorMm = 300.0, double arc = 180.0) {
  ParallelScanSpec spec;
  spec.projections = views;
  spec.arc = arc;
  spec.nu = spec.nv = pixels;
  spec.spacingU = spec.spacingV = detectorMm / pixels;
  return makeParallelScan(spec);
}

/// A general parallel-beam scan from vectors (parallel3d_vec): rays tilted 8 degrees out of the axial plane and 11
/// degrees off the detector's normal, the detector rolled and moved off the axis, `views` views over 180 degrees.
inline Geometry tiltedParallelScan(int views, int nu, int nv, double pixelMm) {
  Geometry g;
  g.detector = DetectorLayout::centred(nu, nv, pixelMm, pixelMm);
  const double degree = 3.14159265358979323846 / 180.0;
  for (int p = 0; p < views; ++p) {
    const double a = 180.0 * p / views * degree, c = std::cos(a), s = std::sin(a);
    auto turn = [&](glm::dvec3 x) { return glm::dvec3(c * x.x + s * x.z, x.y, -s * x.x + c * x.z); };  // Ry(a)
    const double roll = 4.0 * degree;
    const glm::dvec3 u = turn(pixelMm * glm::dvec3(std::cos(roll), std::sin(roll), 0.0));
    const glm::dvec3 v = turn(pixelMm * glm::dvec3(-std::sin(roll), std::cos(roll), 0.0));
    const glm::dvec3 ray = turn(glm::dvec3(std::sin(11.0 * degree), std::sin(8.0 * degree), -1.0));
    g.views.push_back(parallelVectors(ray, turn(glm::dvec3(7.0, -5.0, -40.0)), u, v, nu, nv));
  }
  g.validate("test");
  return g;
}

/// Why the cuda operator cannot run here (no device, not built), or "" where it can. Probed once per process.
inline const std::string& cudaProjectorUnavailableReason() {
  static const std::string reason = [] {
    try {
      makeOperator(Backend::Cuda, circularScan(2, 8), VolumeGrid::centred({8, 8, 8}, glm::dvec3(4.0)));
      return std::string();
    } catch (const CudaError& e) {
      return std::string(e.what());
    } catch (const UsageError& e) {
      return std::string(e.what());  // not built
    }
  }();
  return reason;
}

/// float's unit roundoff (2^-24): the relative error of one correctly rounded float operation.
inline constexpr double kFloatRoundoff = std::numeric_limits<float>::epsilon() / 2;

/// An image's voxels as a plain std::vector (Image::data's allocator differs), for comparisons with one.
inline std::vector<float> values(const Voxels& voxels) { return {voxels.begin(), voxels.end()}; }

/// n floats drawn uniformly from [low, high) by std::mt19937(seed): the same values on every platform's libstdc++.
inline std::vector<float> uniformValues(std::size_t n, unsigned seed, float low, float high) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> v(n);
  for (float& x : v) x = value(random);
  return v;
}

/// A fresh, empty directory for the running test (under the build tree, not the working directory).
inline std::filesystem::path scratchDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(GLRECON_TEST_SCRATCH) / info->test_suite_name() / info->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The command-line tool's exit code (-1: killed by a signal or by the time limit) and its output (stdout and
/// stderr together).
struct CliRun {
  int exitCode;
  std::string output;
};

/// Runs the tool in `dir` with `arguments` (shell words), after `environment` (e.g. "VAR=1"), with a time limit
/// so a hang fails the test instead of blocking the suite. Its log file is removed, so the directory holds only
/// what the tool wrote.
inline CliRun runCli(const std::filesystem::path& dir, const std::string& arguments, const std::string& environment = "",
                     int seconds = 300) {
  const std::filesystem::path log = dir / "cli.log";
  const std::string command = "cd '" + dir.string() + "' && " + environment + " timeout " + std::to_string(seconds) + " '" +
                              GLRECON_CLI_PATH + "' " + arguments + " > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const std::string output = readText(log);
  std::filesystem::remove(log);
  return CliRun{code == 124 ? -1 : code, output};
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Runs `body`, expecting an exception of type E whose message contains every fragment.
template <typename E, typename F>
void expectError(F&& body, std::initializer_list<std::string> fragments) {
  try {
    body();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
  }
}

/// Smooth test projections with known bounds on value and slope: Q = 1 + 0.5 sin(0.3 u + p) cos(0.2 v),
/// projection after projection (nv rows of nu floats each).
inline constexpr double kTestMaxQ = 1.5, kTestSlopeU = 0.15, kTestSlopeV = 0.1;
inline std::vector<float> smoothProjections(const Geometry& g) {
  std::vector<float> q(g.size() * g.detector.nu * g.detector.nv);
  for (std::size_t p = 0; p < g.size(); ++p)
    for (int v = 0; v < g.detector.nv; ++v)
      for (int u = 0; u < g.detector.nu; ++u)
        q[(p * g.detector.nv + v) * g.detector.nu + u] = static_cast<float>(1.0 + 0.5 * std::sin(0.3 * u + p) * std::cos(0.2 * v));
  return q;
}

/// A deterministic pseudo-random stack in [-1, 1) (a linear congruential generator): every bit of a sample matters,
/// unlike smooth data, so bit-for-bit comparisons and rounding bounds are tested where they bite.
inline std::vector<float> randomProjections(const Geometry& g, std::uint32_t seed = 12345) {
  std::vector<float> q(g.size() * g.detector.nu * g.detector.nv);
  std::uint32_t state = seed;
  for (float& x : q) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return q;
}

/// The backend a test names ("graphics-mp"); the tests name backends as the front ends do.
inline Backend backendOf(const std::string& name) {
  const std::optional<Backend> backend = backendNamed(name);
  if (!backend) throw std::invalid_argument("no backend named " + name);
  return *backend;
}

/// makeOperator for a backend named as the front ends name it.
inline std::unique_ptr<ConeBeamOperator> makeNamed(const std::string& name, const Geometry& g, const VolumeGrid& grid,
                                                   const OperatorOptions& options = {}) {
  return makeOperator(backendOf(name), g, grid, options);
}

/// A = forward of a host volume (the operator's volume set to it first).
inline void forwardOf(ConeBeamOperator& op, const float* volume, const std::size_t* views, std::size_t count, float* projections) {
  op.setVolume(volume);
  op.forward(views, count, projections);
}

/// B (Adjoint) of host projections into a host volume: the operator's volume cleared, back-projected into, read.
inline void backOf(ConeBeamOperator& op, const float* projections, const std::size_t* views, std::size_t count, float* volume) {
  const std::vector<float> zeros(op.blockVoxels(), 0.0f);
  op.setVolume(zeros.data());
  op.back(projections, views, count, Weighting::Adjoint);
  op.readVolume(volume);
}

/// The operator's volume read back into an Image of its block's grid.
inline Image volumeOf(ConeBeamOperator& b) {
  Image v(b.blockGrid());
  b.readVolume(v.data.data());
  return v;
}

/// Feeds all projections to `b` (Fdk back) in batches of `batch` (calling `afterEach` after every call), then reads the volume.
inline Image backprojectInBatches(ConeBeamOperator& b, const Geometry& g, const std::vector<float>& q, std::size_t batch,
                                  const std::function<void()>& afterEach = [] {}) {
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  for (std::size_t first = 0; first < g.size(); first += batch) {
    const std::size_t n = std::min(batch, g.size() - first);
    std::vector<std::size_t> views(n);
    for (std::size_t i = 0; i < n; ++i) views[i] = first + i;
    b.back(q.data() + first * pixels, views.data(), n, Weighting::Fdk);
    afterEach();
  }
  Image v = volumeOf(b);
  afterEach();
  return v;
}

/// Feeds raw projections to `b` as the scheduler does with a filter on the device: batches of `batch` handed to the
/// twin, which fills the operator's windows (window() projections each, straddling batches), each window then
/// backprojected; then reads the volume.
inline Image backprojectThroughTwin(ConeBeamOperator& b, DeviceFdkFilter& twin, const Geometry& g, const std::vector<float>& raw,
                                    std::size_t batch) {
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  DeviceProjections* window = nullptr;
  std::vector<std::size_t> inWindow;
  for (std::size_t first = 0; first < g.size();) {
    const std::size_t n = std::min(batch, g.size() - first);
    for (std::size_t done = 0; done < n;) {
      if (!window) window = b.nextWindow();
      const std::size_t m = std::min(n - done, static_cast<std::size_t>(b.window()) - inWindow.size());
      std::vector<std::size_t> views(m);
      for (std::size_t i = 0; i < m; ++i) views[i] = first + done + i;
      twin.filter(raw.data() + (first + done) * pixels, views.data(), m, *window, inWindow.size());
      inWindow.insert(inWindow.end(), views.begin(), views.end());
      done += m;
      if (inWindow.size() == static_cast<std::size_t>(b.window())) {
        b.back(*window, inWindow.data(), inWindow.size());
        window = nullptr;
        inWindow.clear();
      }
    }
    first += n;
  }
  if (window) b.back(*window, inWindow.data(), inWindow.size());
  return volumeOf(b);
}

}  // namespace glrecon::test
