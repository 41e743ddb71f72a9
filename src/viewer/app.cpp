// The desktop app (app.h): one loop on the window's thread steps the task (FDK, fdk_task.h; or an iterative method a
// subset at a time, iterative_task.h, the view's tasks) until the next frame is due
// (paced at --fps, 60 by default, as a display would pace it), then builds the widgets (Dear ImGui, immediate mode: the
// panels are laid out from the window's size and content scale every frame) and draws the slices from the operator's
// volume texture. The 3D view (a compute shader) is drawn again only when the volume or the view changed, and while
// projections arrive at most every --redraw-3d ms and at most a fifth of the time, so frames and reconstruction do not
// wait on it.
#include "viewer/app.h"

#include <GL/glew.h>  // before any other GL header
#include <GLFW/glfw3.h>  // key codes: Dear ImGui 1.86's GLFW backend indexes its keys by them
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "core/user_cache.h"
#include "device/gl/shader.h"
#include "device/gl/state_scope.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/validate.h"
#include "glrecon/roi.h"
#include "recon/tuning.h"
#include "viewer/fdk_task.h"
#include "viewer/grid_preview.h"
#include "viewer/iterative_task.h"
#include "viewer/slice_renderer.h"
#include "viewer/volume_histogram.h"
#include "viewer/volume_renderer.h"
#include "viewer/window.h"

namespace glrecon::viewer {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const char* const kBackendNames[] = {"auto", "graphics", "graphics-mp", "compute", "cpu"};
const char* const kPanelNames[] = {"Axial", "Coronal", "Sagittal"};
// The methods of the panel's list: FDK, then the iterative methods (IterativeMethod's order, after FDK's 0).
const char* const kMethodNames[] = {"fdk", "sart", "sirt", "cgls", "osem", "asd-pocs", "pdhg-tv"};
constexpr IterativeMethod kIterativeMethods[] = {IterativeMethod::Sart, IterativeMethod::Sirt, IterativeMethod::Cgls, IterativeMethod::Osem,
                                                 IterativeMethod::AsdPocs, IterativeMethod::PdhgTv};
// The methods that take ordered subsets (the others update from every view at once).
bool takesSubsets(IterativeMethod m) { return m == IterativeMethod::Sart || m == IterativeMethod::Osem || m == IterativeMethod::AsdPocs; }
// The preview's outlines: pure green and magenta, which no grey of the projection under them has (tests find them so).
constexpr ImU32 kPreviewGridColour = IM_COL32(0, 255, 0, 255), kPreviewRegionColour = IM_COL32(255, 0, 255, 255);
constexpr int kRecentScans = 8;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double secondsBetween(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The value below which a `fraction` of `values` lie (nearest rank); 0 for none.
double quantile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto i = static_cast<std::size_t>(std::clamp(fraction * static_cast<double>(values.size()), 1.0, static_cast<double>(values.size())) - 1.0);
  return values[i];
}

// The recent scans, newest first, in the user cache (core/user_cache.h): one value, entries joined by " | ", each
// "geometry ; projections".
std::vector<std::pair<std::string, std::string>> recentScans() {
  std::vector<std::pair<std::string, std::string>> list;
  const std::optional<std::string> value = rememberedValue("recent_scans.txt", "scans");
  if (!value) return list;
  std::string rest = *value;
  while (!rest.empty()) {
    const std::size_t bar = rest.find(" | ");
    const std::string entry = rest.substr(0, bar);
    if (const std::size_t semi = entry.find(" ; "); semi != std::string::npos) list.emplace_back(entry.substr(0, semi), entry.substr(semi + 3));
    rest = bar == std::string::npos ? "" : rest.substr(bar + 3);
  }
  return list;
}

void rememberScan(const std::string& geometry, const std::string& projections) {
  auto list = recentScans();
  std::erase(list, std::pair{geometry, projections});
  list.insert(list.begin(), {geometry, projections});
  std::string value;
  for (std::size_t i = 0; i < list.size() && i < kRecentScans; ++i) value += (i ? " | " : "") + list[i].first + " ; " + list[i].second;
  remember("recent_scans.txt", "scans", value);
}

// Key presses the app acts on, counted as they arrive (a GLFW callback that Dear ImGui's chains to): Dear ImGui 1.86
// sees a key only as held or not at each frame, so a short press between two slow frames (a software renderer) would
// be lost. The app has one window.
int spacePresses = 0, quitPresses = 0;

void countKeys(GLFWwindow*, int key, int, int action, int mods) {
  if (action != GLFW_PRESS) return;
  if (key == GLFW_KEY_SPACE) ++spacePresses;
  if (key == GLFW_KEY_Q && (mods & GLFW_MOD_CONTROL)) ++quitPresses;
}

// What --backend auto measured on this device for a volume's size class (recon/tuning.h keeps it in the user cache,
// backends.txt: "DATE SIDE name=rate,fixed,start ..."), the app's key (GL backends and cpu) or a CUDA build's.
struct BackendSpeeds {
  std::string date;
  int side = 0;
  std::vector<std::pair<std::string, double>> rates;  // backend name, voxel updates per second
};

std::optional<BackendSpeeds> rememberedSpeeds(const gl::DeviceInfo& device, int sizeClassSide) {
  const std::string base = device.renderer + " | " + device.version, size = " | class " + std::to_string(sizeClassSide) + "^3";
  for (const std::string& key : {base + size, base + " | with cuda" + size}) {
    const std::optional<std::string> value = rememberedValue("backends.txt", key);
    if (!value) continue;
    BackendSpeeds speeds;
    std::istringstream in(*value);
    std::string entry;
    if (!(in >> speeds.date >> speeds.side)) continue;
    while (in >> entry) {
      const std::size_t eq = entry.find('=');
      if (eq == std::string::npos) break;
      double rate = 0;
      std::istringstream(entry.substr(eq + 1)) >> rate;
      if (rate > 0) speeds.rates.emplace_back(entry.substr(0, eq), rate);
    }
    if (!speeds.rates.empty()) return speeds;
  }
  return std::nullopt;
}

ImTextureID textureId(GLuint texture) { return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(texture)); }

// A slice as an image of one texel per voxel (drawn by shaders/slice_view.frag), shown scaled by the widgets.
struct SliceImage {
  gl::Framebuffer frame = gl::createFramebuffer();
  gl::Texture texture;
  int across = 0, up = 0;

  void render(const gl::Program& program, const gl::VertexArray& quad, GLuint volume, const std::array<int, 3>& size, float scale, int axis,
              int index, int across_, int up_, double low, double high, int colourMap) {
    if (across_ != across || up_ != up) {
      texture = gl::createTexture(GL_TEXTURE_2D);
      glTextureStorage2D(texture.id(), 1, GL_RGBA8, across_, up_);
      glTextureParameteri(texture.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
      glTextureParameteri(texture.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);  // voxels as blocks: what was reconstructed
      glNamedFramebufferTexture(frame.id(), GL_COLOR_ATTACHMENT0, texture.id(), 0);
      across = across_;
      up = up_;
    }
    gl::StateScope keep;
    glBindFramebuffer(GL_FRAMEBUFFER, frame.id());
    glDisable(GL_BLEND);
    glViewport(0, 0, across, up);
    const GLuint p = program.id();
    glUseProgram(p);
    glBindVertexArray(quad.id());
    glBindTextureUnit(0, volume);
    glUniform3i(glGetUniformLocation(p, "size"), size[0], size[1], size[2]);
    glUniform1f(glGetUniformLocation(p, "scale"), scale);
    glUniform1f(glGetUniformLocation(p, "low"), static_cast<float>(low));
    glUniform1f(glGetUniformLocation(p, "high"), static_cast<float>(high));
    glUniform1i(glGetUniformLocation(p, "colourMap"), colourMap);
    glUniform1f(glGetUniformLocation(p, "progress"), -1.0f);
    glUniform1i(glGetUniformLocation(p, "axis"), axis);
    glUniform1i(glGetUniformLocation(p, "index"), index);
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  }
};

// Every projection of a source, read in order into one stack (an iterative method reads each many times).
Image readWhole(ProjectionSource& source) {
  const DetectorLayout d = source.detector();
  Image stack({d.nu, d.nv, static_cast<int>(source.count())}, {d.spacingU, d.spacingV, 1.0}, {d.originU, d.originV, 0.0});
  source.read(0, source.count(), stack.data.data());
  return stack;
}

// One reconstruction: its scan (the source is read once), the task stepping FDK or an iterative method, and what it
// measured. The task refers to what is declared before it, so it goes first.
struct Run {
  OpenedScan scan;
  Image projections;                       // an iterative method's: the scan read whole
  std::unique_ptr<ConeBeamOperator> op;    // an iterative method's operator, in the window's context
  std::unique_ptr<ViewTask> task;
  FdkViewTask* fdk = nullptr;              // the task as what it is (one of the two)
  IterativeViewTask* iterative = nullptr;
  bool paused = false, done = false;
  Clock::time_point started = Clock::now();
  Clock::time_point stepping{};                             // the first step (an iterative method's rate counts from it)
  Clock::time_point firstProjection{}, lastProjection{};  // when the first and the last projection were in
  std::vector<Clock::time_point> frameTimes;               // when each frame while reconstructing began
  std::size_t renders3d = 0, timed3d = 0;
  double gpu3d = 0;  // GPU seconds of the 3D view's timed drawings
};

// What one reconstruction measured (the summary line, --measure's report).
struct Measured {
  double seconds = 0, rate = 0;    // the scheduler's end to end, projections per second
  double framesPerSecond = 0;      // frames begun while projections arrived, over that time
  std::size_t frames = 0;
  double intervalMedian = 0, intervalP95 = 0, intervalMax = 0;  // between those frames, s
};

class App {
 public:
  explicit App(const AppSetup& setup)
      : setup_(setup),
        window_(setup.width, setup.height, "glrecon", true, setup.offscreen, setup.options.gpu, false),
        uploader_(1, 1) {
    scan_ = setup.scan;
    size_ = setup.size;
    spacing_ = static_cast<float>(setup.spacing);
    if (setup.options.backend) {
      for (int i = 1; i < static_cast<int>(std::size(kBackendNames)); ++i)
        if (backendNamed(kBackendNames[i]) == setup.options.backend) backend_ = i;
    }
    windowText_ = setup.options.window ? std::to_string(setup.options.window) : "auto";
    if (setup.method)
      for (int i = 0; i < static_cast<int>(std::size(kIterativeMethods)); ++i)
        if (kIterativeMethods[i] == *setup.method) method_ = i + 1;
    iterations_ = setup.iterative.iterations;
    subsetsText_ = setup.iterative.subsets ? std::to_string(setup.iterative.subsets) : "auto";
    pair_ = setup.pair;
    roi_ = setup.roi;
    style_.mode = setup.mip ? VolumeMode::Mip : VolumeMode::Dvr;
    autoResolution_ = setup.autoResolution;
    if (setup.range) {
      low_ = static_cast<float>(setup.range->first);
      high_ = static_cast<float>(setup.range->second);
      autoWindow_ = false;
      style_.transfer = defaultTransfer(low_, high_);
    }
    recent_ = recentScans();
    sliceProgram_ = buildSliceProgram();
    quad_ = gl::createVertexArray();

    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // nothing written beside the user's files
    scale_ = window_.contentScale();
    ImFontConfig font;
    font.SizePixels = std::round(13.0f * scale_);
    io.Fonts->AddFontDefault(&font);
    ImGui::StyleColorsDark();
    ImGui::GetStyle().ScaleAllSizes(scale_);
    if (window_.glfwWindow()) {
      glfwSetKeyCallback(window_.glfwWindow(), countKeys);  // before Dear ImGui's, which calls it
      ImGui_ImplGlfw_InitForOpenGL(window_.glfwWindow(), true);
    }
    ImGui_ImplOpenGL3_Init("#version 450 core");
  }

  ~App() {
    window_.context().makeCurrent();
    ImGui_ImplOpenGL3_Shutdown();
    if (window_.glfwWindow()) ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
  }

  void run() {
    if (setup_.offscreen && !setup_.start) {
      // A script's look at the set-up panel (the preview of the grid over the first projection): one frame, saved. A scan
      // that cannot be opened fails the command (naming the file), as a start would; nothing is written.
      openPreview(previewChoice());
      if (preview_->failure) std::rethrow_exception(preview_->failure);
      pendingShot_ = setup_.screenshot;
      frame();
      return;
    }
    if (setup_.measure > 0) measureReference();
    if (setup_.start && !failure_) start();
    // Frames are paced as a display paces them: each is due one period after the one before was due, so a frame
    // begun late (a step ends at a batch's end) makes the next one's wait shorter, not the rate lower.
    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / std::max(1.0, setup_.fps)));
    auto nextFrame = Clock::now();
    while (!window_.closeRequested()) {
      const bool working = run_ && !run_->paused && !run_->done;
      if (working) {
        // Steps fill the time until the next frame is due (a step hands over at least one batch once there is one).
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(nextFrame - Clock::now());
        step(std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(8)));
        window_.pollEvents();
      } else {
        // Idle (nothing running, paused, done): sleep until input, or a quarter of a second, then draw at once.
        window_.waitEvents(0.25);
        nextFrame = Clock::now();
      }
      const auto now = Clock::now();
      if (now >= nextFrame) {
        nextFrame = now - nextFrame < period ? nextFrame + period : now + period;
        if (run_ && !run_->done && run_->task->done() > 0) run_->frameTimes.push_back(now);
        frame();
      }
      if (measureRound()) continue;
      if (scripted()) break;
    }
    if (run_ && !run_->done) {
      const std::size_t done = run_->task->done(), total = run_->task->total();
      run_->task->cancel();
      std::fprintf(stderr, "app: %s closed after %zu of %zu %s: reconstruction cancelled, nothing written\n",
                   setup_.offscreen ? "offscreen frames" : "window", done, total, units(*run_));
    }
  }

 private:
  // ---- the reconstruction ----
  // The iterative method chosen (empty: FDK).
  std::optional<IterativeMethod> chosenMethod() const {
    if (method_ < 1) return std::nullopt;
    return kIterativeMethods[method_ - 1];
  }

  // The fields every method shares, checked before the scan is opened (throws UsageError naming the field).
  void checkSharedFields() const {
    if (backend_ > 0 && backendNamed(kBackendNames[backend_]) == Backend::Cuda)
      throw UsageError("backend: expected one that draws in the window (graphics, graphics-mp, compute, cpu), found cuda");
    if (size_ < 1 || size_ > 2048) throw UsageError("size: expected 1 to 2048 voxels per axis, found " + std::to_string(size_));
    if (!(spacing_ > 0)) throw UsageError("spacing: expected mm > 0, found " + std::to_string(spacing_));
  }

  // FDK's options as the panel sets them (throws UsageError naming the field).
  FdkOptions chosenOptions() const {
    checkSharedFields();
    FdkOptions options = setup_.options;
    options.backend = backend_ ? backendNamed(kBackendNames[backend_]) : std::nullopt;
    options.autoGlOnly = true;
    options.progress = false;
    options.streaming = true;
    options.roi = roi_;
    if (windowText_ == "auto" || windowText_.empty()) {
      options.window = 0;
    } else {
      char* end = nullptr;
      const long w = std::strtol(windowText_.c_str(), &end, 10);
      if (*end || w < 1) throw UsageError("window: expected auto or a whole number of projections per pass >= 1, found '" + windowText_ + "'");
      options.window = static_cast<int>(w);
    }
    return options;
  }

  // An iterative method's options as the panel sets them (the region's mask is added once the scan is open).
  IterativeOptions chosenIterativeOptions() const {
    checkSharedFields();
    IterativeOptions o = setup_.iterative;
    o.method = *chosenMethod();
    o.iterations = iterations_;
    if (iterations_ < 1) throw UsageError("iterations: expected a whole number >= 1, found " + std::to_string(iterations_));
    o.subsets = 0;
    if (takesSubsets(o.method) && !(subsetsText_ == "auto" || subsetsText_.empty())) {
      char* end = nullptr;
      const long n = std::strtol(subsetsText_.c_str(), &end, 10);
      if (*end || n < 1) throw UsageError("subsets: expected auto or a whole number of subsets >= 1, found '" + subsetsText_ + "'");
      o.subsets = static_cast<int>(n);
    }
    return o;
  }

  // Auto's backend for the iterative methods: compute on a GPU (the iterate stays in its volume, drawn from there), cpu
  // on a software renderer (as FDK's auto takes it there).
  Backend iterativeBackend() {
    if (backend_ > 0) return *backendNamed(kBackendNames[backend_]);
    return window_.context().info().software ? Backend::Cpu : Backend::Compute;
  }

  // The plan of a reconstruction of `scan` with the panel's choices, on the window's context.
  FdkPlan planFor(const OpenedScan& scan, const VolumeGrid& grid) {
    const FdkOptions options = chosenOptions();
    checkVolumeInBeam(*scan.geometry, grid, "app");
    auto session = std::make_shared<DeviceSession>();
    session->useContext(options.gpu, window_.context());
    return planFdk(*scan.geometry, grid, options, *scan.source, session);
  }

  // An iterative method's task for `r` (its scan open): every projection read, the region's mask, the operator made in
  // the window's context (GL operators compute where the window draws), the normalisations computed.
  void prepareIterative(Run& r, const VolumeGrid& grid) {
    IterativeOptions o = chosenIterativeOptions();
    const Geometry& geometry = *r.scan.geometry;
    checkVolumeInBeam(geometry, grid, "app");
    if (!roi_.empty()) o.mask = makeRegionOfInterest(roi_, geometry, grid).mask;
    r.projections = readWhole(*r.scan.source);
    OperatorOptions po;
    po.pair = pair_;
    po.device = setup_.options.gpu;
    po.threads = setup_.options.threads;
    po.context = &window_.context();
    r.op = makeOperator(iterativeBackend(), geometry, grid, po);
    auto task = std::make_unique<IterativeViewTask>(*r.op, geometry, r.projections, grid, o, "app", setup_.quiet);
    r.iterative = task.get();
    r.task = std::move(task);
  }

  // What a run's steps count: projections (FDK), subsets, or iterations (the methods that move every view at once).
  static const char* units(const Run& r) {
    if (!r.iterative) return "projections";
    return r.task->total() > static_cast<std::size_t>(r.iterative->options().iterations) ? "subsets" : "iterations";
  }

  void start() {
    error_.clear();
    failure_ = nullptr;
    try {
      // A bad field is named before the scan is opened.
      const std::optional<IterativeMethod> method = chosenMethod();
      if (method) chosenIterativeOptions();
      else chosenOptions();
      auto next = std::make_unique<Run>();
      ScanChoice choice = scan_;
      choice.iterative = method.has_value();
      next->scan = setup_.open(choice);
      const VolumeGrid grid = VolumeGrid::centred({size_, size_, size_}, glm::dvec3(spacing_));
      if (method) {
        prepareIterative(*next, grid);
      } else {
        const FdkPlan plan = planFor(next->scan, grid);
        auto task = std::make_unique<FdkViewTask>(plan, window_.context(), *next->scan.source);
        next->fdk = task.get();
        next->task = std::move(task);
      }
      if (run_ && !run_->done) run_->task->cancel();
      run_ = std::move(next);
      grid_ = grid;  // only now: until here the slices draw the last run's volume on its grid
      if (!scan_.simulate) {
        rememberScan(scan_.geometry, scan_.projections);
        recent_ = recentScans();
      }
      cursor_ = {size_ / 2, size_ / 2, size_ / 2};
      histogram_.reset();
      histogramGpu_.reset();  // passes in flight sampled the last run's volume
      lastHistogram_ = Clock::now() - std::chrono::seconds(10);
      dirty3d_ = true;
      collapsePreview_ = true;
      status_ = method ? std::string(methodName(*method)) + ": iterating" : "reconstructing";
    } catch (const std::exception& e) {
      error_ = e.what();
      failure_ = std::current_exception();
      if (!rethrows()) std::fprintf(stderr, "app: %s\n", e.what());  // a script's failure is the command's error
    }
  }

  void step(std::chrono::milliseconds budget) {
    Run& r = *run_;
    if (r.stepping == Clock::time_point{}) r.stepping = Clock::now();
    try {
      const std::size_t until = setup_.closeAfter;
      const std::size_t before = r.task->done();
      const bool more = r.task->step(budget, until && until < r.task->total() ? until : 0);
      if (r.task->done() != before) {
        volumeChanged_ = true;
        r.lastProjection = Clock::now();
        if (before == 0) r.firstProjection = r.lastProjection;
      }
      if (!more) {
        r.task->finish();
        r.done = true;
        volumeChanged_ = true;
        dirty3d_ = true;  // the finished volume at once
        if (!setup_.quiet) printSummary(r);
        status_ = "done";
        lastHistogram_ = Clock::now() - std::chrono::seconds(10);  // the final volume's window at once
      }
    } catch (const std::exception& e) {
      error_ = e.what();
      failure_ = std::current_exception();
      if (!rethrows()) std::fprintf(stderr, "app: %s\n", e.what());  // a script's failure is the command's error
      r.task->cancel();
      run_.reset();
    }
  }

  // The summary line of a finished run: the reconstruction's time and rate, the frames while it ran and the 3D view's.
  void printSummary(const Run& r) const {
    const Measured m = measured(r);
    char frames[320];
    std::snprintf(frames, sizeof frames,
                  "%zu frames while %s arrived (%.1f frames/s; intervals median %.1f ms, 95%% %.1f ms, max %.1f ms); the 3D view drawn %zu times "
                  "at %d x %d pixels (%.2f ms GPU each) in a %d x %d panel",
                  m.frames, units(r), m.framesPerSecond, 1e3 * m.intervalMedian, 1e3 * m.intervalP95, 1e3 * m.intervalMax, r.renders3d, last3d_[0],
                  last3d_[1], r.timed3d ? 1e3 * r.gpu3d / static_cast<double>(r.timed3d) : 0.0, panel3d_[0], panel3d_[1]);
    if (r.fdk) {
      const FdkReport& report = r.fdk->report();
      if (!report.autoNote.empty()) std::fprintf(stderr, "%s\n", report.autoNote.c_str());
      std::fprintf(stderr, "app: %s: %zu projections in %.2f s end to end (%.1f projections/s); %s\n", report.backend.c_str(), r.task->total(),
                   m.seconds, m.rate, frames);
      return;
    }
    const IterativeViewTask& t = *r.iterative;
    const IterativeReport& report = t.report();
    const std::string steps = std::string(units(r)) == "subsets" ? " (" + std::to_string(r.task->done()) + " subsets)" : "";
    std::fprintf(stderr, "app: %s on %s: %zu iterations%s in %.2f s (%.2f %s/s), final residual %.6g (%.4g of ||b||); %s\n",
                 methodName(t.options().method), r.op->description().c_str(), report.iterations.size(), steps.c_str(), m.seconds, m.rate, units(r),
                 report.finalResidual, t.relative(report.finalResidual), frames);
    if (!report.stopReason.empty()) std::fprintf(stderr, "app: %s: %s\n", methodName(t.options().method), report.stopReason.c_str());
    if (!report.warning.empty()) std::fprintf(stderr, "warning: %s\n", report.warning.c_str());
  }

  // A finished run's figures: the scheduler's own end-to-end time (as `fdk --stream` reports it; an iterative method's
  // report: its iterations, normalisation included), and the frames begun between the first step's result in and the last.
  static Measured measured(const Run& r) {
    Measured m;
    const double reported = r.fdk ? r.fdk->report().totalSeconds : r.iterative->report().seconds;
    m.seconds = reported > 0 ? reported : secondsSince(r.started);
    m.rate = static_cast<double>(r.task->done()) / m.seconds;
    std::vector<double> intervals;
    Clock::time_point previous{}, first{};
    for (const Clock::time_point t : r.frameTimes) {
      if (t < r.firstProjection || t > r.lastProjection) continue;
      if (m.frames++) intervals.push_back(secondsBetween(previous, t));
      else first = t;
      previous = t;
    }
    // The frames' rate: frames after the first over the time from the first to the last (1 / the mean interval), as a
    // frame rate is measured. Frames counted over the whole time the projections arrived would lose up to a frame at
    // each end to where the frames fall (a scan of 0.32 s holds 19 frames at 60 frames/s: 5% a frame).
    m.framesPerSecond = m.frames >= 2 ? static_cast<double>(m.frames - 1) / secondsBetween(first, previous) : 0.0;
    m.intervalMedian = quantile(intervals, 0.5);
    m.intervalP95 = quantile(intervals, 0.95);
    m.intervalMax = quantile(intervals, 1.0);
    return m;
  }

  // --measure: before each of the app's runs, the same reconstruction without frames (the scheduler's run(), what
  // `fdk --stream` does: same plan, same context, the volume into memory); after each, a line comparing them. True
  // while rounds remain (the next has started).
  bool measureRound() {
    if (setup_.measure < 1 || !run_ || !run_->done || measuredRounds_ >= setup_.measure) return false;
    if (streamRates_.size() <= static_cast<std::size_t>(measuredRounds_)) return false;  // the reference failed (failure_)
    const Measured app = measured(*run_);
    const double reference = streamRates_.back();
    appRates_.push_back(app.rate);
    appFrames_.push_back(app.framesPerSecond);
    ++measuredRounds_;
    std::fprintf(stderr,
                 "app measure %d/%d: the app %.1f projections/s, %.1f%% of the same reconstruction without frames (%.1f projections/s); "
                 "%.1f frames/s while projections arrived\n",
                 measuredRounds_, setup_.measure, app.rate, 100.0 * app.rate / reference, reference, app.framesPerSecond);
    if (measuredRounds_ < setup_.measure) {
      measureReference();
      start();
      return run_ != nullptr;
    }
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : 0.5 * (v[(v.size() - 1) / 2] + v[v.size() / 2]);
    };
    const double appRate = median(appRates_), streamRate = median(streamRates_), fps = median(appFrames_);
    std::fprintf(stderr,
                 "app measure: medians of %d rounds: the app %.1f projections/s = %.1f%% of without frames (%.1f projections/s; goal >= 90%%: %s), "
                 "%.1f frames/s while projections arrived (goal >= 60: %s)\n",
                 setup_.measure, appRate, 100.0 * appRate / streamRate, streamRate, appRate >= 0.9 * streamRate ? "met" : "not met", fps,
                 fps >= 60.0 ? "met" : "not met");
    return false;
  }

  // The reference of --measure: the scan reconstructed by the scheduler alone, as `fdk --stream` runs it.
  void measureReference() {
    try {
      OpenedScan scan = setup_.open(scan_);
      const VolumeGrid grid = VolumeGrid::centred({size_, size_, size_}, glm::dvec3(spacing_));
      const FdkPlan plan = planFor(scan, grid);
      FdkReconstructor reconstructor(plan, &window_.context());
      ImageSink sink(plan.grid, plan.options.threads);
      const FdkReport report = reconstructor.run(*scan.source, sink);
      // Its operator's program, deleted with it, may still be the current one (deletion waits until it is not): a
      // state scope restoring it after would bind a name that no longer exists.
      glUseProgram(0);
      streamRates_.push_back(static_cast<double>(plan.projections) / report.totalSeconds);
      if (!setup_.quiet)
        std::fprintf(stderr, "app measure: without frames: %s: %zu projections in %.2f s end to end (%.1f projections/s)\n", report.backend.c_str(),
                     plan.projections, report.totalSeconds, streamRates_.back());
    } catch (const std::exception& e) {
      error_ = e.what();
      failure_ = std::current_exception();
    }
  }

  void stop() {
    if (!run_ || run_->done) return;
    run_->task->cancel();
    std::fprintf(stderr, "app: stopped after %zu of %zu %s: nothing written\n", run_->task->done(), run_->task->total(), units(*run_));
    run_.reset();
    status_ = "stopped";
  }

  // The grey window from the GPU histogram, twice a second while projections arrive (a few KB read back, never the
  // volume), while the user has not set one. Its passes are issued a frame apart, each once the one before is done
  // (VolumeHistogram::begin, poll): the frame never waits for the GPU, nor the reconstruction queued before them.
  void updateWindow(GLuint volume, float scale) {
    if (!run_) return;
    if (!histogramGpu_) histogramGpu_ = std::make_unique<VolumeHistogram>();
    if (histogramGpu_->busy()) {
      std::optional<Histogram> h = histogramGpu_->poll(volume, grid_.size, scale);
      if (!h) return;
      histogram_ = std::move(h);
      applyAutoWindow();
    } else {
      if (run_->task->done() == 0 || secondsSince(lastHistogram_) < 0.5) return;
      if (run_->done && histogram_ && histogramFinal_) return;
      histogramFinal_ = run_->done;  // the last one begins once the volume is final
      histogramGpu_->begin(volume, grid_.size, scale);
      lastHistogram_ = Clock::now();
    }
  }

  // The finished volume's histogram and window now, waiting for the GPU (a script's outputs show the final window).
  void finalWindowNow() {
    if (!run_ || !run_->done) return;
    histogramGpu_ = std::make_unique<VolumeHistogram>();  // drops any passes in flight
    histogram_ = histogramGpu_->compute(run_->task->texture(uploader_), grid_.size, run_->task->scale());
    histogramFinal_ = true;
    applyAutoWindow();
  }

  void applyAutoWindow() {
    if (autoWindow_ && histogram_)
      if (const auto w = objectWindow(*histogram_)) {
        low_ = static_cast<float>(w->first);
        high_ = static_cast<float>(w->second);
        if (transferFollows_) style_.transfer = defaultTransfer(low_, high_);
        volumeChanged_ = true;  // redrawn as a volume change is (view3dPanel)
      }
  }

  // ---- the frame ----
  void frame() {
    const auto [width, height] = window_.framebufferSize();
    GLuint volume = 0;
    float scale = 1.0f;
    if (run_) {
      volume = run_->task->texture(uploader_);
      scale = run_->task->scale();
      updateWindow(volume, scale);
    }
    ImGui_ImplOpenGL3_NewFrame();
    if (window_.glfwWindow()) {
      ImGui_ImplGlfw_NewFrame();
    } else {
      ImGuiIO& io = ImGui::GetIO();
      io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
      io.DeltaTime = 1.0f / 60.0f;
    }
    ImGui::NewFrame();
    const ImVec2 display = ImGui::GetIO().DisplaySize;
    const float panel = std::min(360.0f * scale_, 0.4f * display.x);
    sidePanel(panel, display.y);
    const float cw = 0.5f * (display.x - panel), ch = 0.5f * display.y;
    for (int i = 0; i < 3; ++i) slicePanel(i, ImVec2(panel + cw * static_cast<float>(i % 2), ch * static_cast<float>(i / 2)), ImVec2(cw, ch), volume, scale);
    view3dPanel(ImVec2(panel + cw, ch), ImVec2(cw, ch), volume, scale);
    ImGui::Render();
    {
      gl::StateScope keep;
      glBindFramebuffer(GL_FRAMEBUFFER, window_.framebuffer());
      glViewport(0, 0, width, height);
      glClearColor(0.08f, 0.08f, 0.08f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    }
    if (!pendingShot_.empty()) {
      const std::string what = run_ && !run_->done ? "screenshot at " + std::to_string(run_->task->done()) + " of " +
                                                         std::to_string(run_->task->total()) + " " + units(*run_) + ":"
                                                   : std::string("screenshot");
      saveRgb(pendingShot_, width, height, readFramebufferRgb(window_.framebuffer(), width, height), what.c_str());
      pendingShot_.clear();
    }
    window_.present();
    writeWidgetMap();
  }

  // ---- tests driving the window (AppSetup::widgetMap) ----
  void mark(const char* name) {
    if (setup_.widgetMap.empty()) return;
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    char line[160];
    std::snprintf(line, sizeof line, "widget %s|%.1f %.1f %.1f %.1f\n", name, a.x, a.y, b.x, b.y);
    widgets_ += line;
  }

  // A rectangle that is not the last item's (drawn on the draw list), to 1e-4 pixel: tests project onto it.
  void markRect(const char* name, ImVec2 a, ImVec2 b) {
    if (setup_.widgetMap.empty()) return;
    char line[192];
    std::snprintf(line, sizeof line, "widget %s|%.4f %.4f %.4f %.4f\n", name, a.x, a.y, b.x, b.y);
    widgets_ += line;
  }

  void writeWidgetMap() {
    if (setup_.widgetMap.empty()) return;
    std::ostringstream out;
    out << "frame " << ++mapFrames_ << "\n";
    out << "run " << (run_ ? (run_->done ? "done" : run_->paused ? "paused" : "running") : "none") << " " << (run_ ? run_->task->done() : 0) << " "
        << (run_ ? run_->task->total() : 0) << "\n";
    out << "cursor " << cursor_[0] << " " << cursor_[1] << " " << cursor_[2] << "\n";
    out << "display " << ImGui::GetIO().DisplaySize.x << " " << ImGui::GetIO().DisplaySize.y << "\n";
    char window[96];
    std::snprintf(window, sizeof window, "window %.9g %.9g\n", static_cast<double>(low_), static_cast<double>(high_));
    out << "method " << kMethodNames[method_] << " " << iterations_ << " " << (subsetsText_.empty() ? "auto" : subsetsText_) << " "
        << projectorPairName(pair_) << "\n";
    if (run_ && run_->iterative) out << "iteration " << run_->iterative->last().iteration << " " << run_->iterative->last().subset << "\n";
    out << window << "status " << status_ << "\nerror " << error_ << "\n" << widgets_;
    widgets_.clear();
    const std::string temporary = setup_.widgetMap + ".part";
    {
      std::ofstream file(temporary, std::ios::trunc);
      file << out.str();
    }
    std::error_code ignored;
    fs::rename(temporary, setup_.widgetMap, ignored);
  }

  void saveRgb(const std::string& path, int width, int height, const std::vector<unsigned char>& rgb, const char* what) {
    try {
      writeRgbPng(path, width, height, rgb, setup_.overwrite);
      if (!setup_.quiet) std::fprintf(stderr, "app: %s %s\n", what, path.c_str());
      status_ = std::string(what) + " " + path;
    } catch (const std::exception& e) {
      error_ = e.what();
      std::fprintf(stderr, "app: %s not saved: %s\n", what, e.what());
    }
  }

  void sidePanel(float width, float height) {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(width, height));
    ImGui::Begin("glrecon", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse);
    const bool running = run_ && !run_->done;
    if (ImGui::CollapsingHeader("Scan", ImGuiTreeNodeFlags_DefaultOpen)) {
      int source = scan_.simulate ? 0 : 1;
      ImGui::RadioButton("simulated scanner", &source, 0);
      ImGui::SameLine();
      ImGui::RadioButton("files", &source, 1);
      mark("files");
      scan_.simulate = source == 0;
      if (scan_.simulate) {
        float rate = static_cast<float>(scan_.rate);
        ImGui::DragFloat("projections/s", &rate, 1.0f, 0.0f, 1000.0f, rate > 0 ? "%.0f" : "as fast as it can");
        scan_.rate = rate;
      } else {
        ImGui::InputText("geometry (RTK XML)", &scan_.geometry);
        mark("geometry");
        ImGui::InputText("projections", &scan_.projections);
        mark("projections");
        if (!recent_.empty() && ImGui::BeginCombo("recent", "open a recent scan")) {
          for (const auto& [g, p] : recent_)
            if (ImGui::Selectable((p + "##" + g).c_str())) {
              scan_.geometry = g;
              scan_.projections = p;
            }
          ImGui::EndCombo();
        }
      }
    }
    if (ImGui::CollapsingHeader("Reconstruction", ImGuiTreeNodeFlags_DefaultOpen)) {
      ImGui::BeginDisabled(running);
      methodCombo();
      backendCombo();
      if (!chosenMethod()) {
        ImGui::InputText("window W", &windowText_);
      } else {
        ImGui::InputInt("iterations", &iterations_);
        if (takesSubsets(*chosenMethod())) ImGui::InputText("subsets", &subsetsText_);
        int pair = static_cast<int>(pair_);
        ImGui::RadioButton("interpolating", &pair, static_cast<int>(ProjectorPair::Interpolating));
        ImGui::SameLine();
        ImGui::RadioButton("matched", &pair, static_cast<int>(ProjectorPair::Matched));
        ImGui::SameLine();
        ImGui::RadioButton("distance-driven", &pair, static_cast<int>(ProjectorPair::DistanceDriven));
        ImGui::SameLine();
        ImGui::TextUnformatted("projector");
        pair_ = static_cast<ProjectorPair>(pair);
      }
      ImGui::InputInt("size (voxels)", &size_);
      ImGui::InputFloat("spacing (mm)", &spacing_, 0.1f, 1.0f, "%.3f");
      ImGui::InputText("ROI", &roi_);
      mark("roi");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("empty: the whole volume; fov, fov-cylinder, cylinder:X,Z,R,Y0,Y1, box:X0,Y0,Z0,X1,Y1,Z1, sphere:X,Y,Z,R (mm, "
                          "rotation axis y), or a mask .mha");
      ImGui::EndDisabled();
      previewPanel();
      if (!running) {
        if (ImGui::Button(run_ ? "Start again" : "Start")) start();
        mark("start");
      } else {
        if (ImGui::Button(run_->paused ? "Resume" : "Pause")) run_->paused = !run_->paused;
        mark("pause");
        ImGui::SameLine();
        if (ImGui::Button("Stop")) stop();
        mark("stop");
      }
      if (run_) progressBar(*run_);
      if (!status_.empty()) ImGui::TextWrapped("%s", status_.c_str());
      if (!error_.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.4f, 0.3f, 1.0f));
        ImGui::TextWrapped("%s", error_.c_str());
        ImGui::PopStyleColor();
        mark("error");
      }
    }
    if (ImGui::CollapsingHeader("Grey window", ImGuiTreeNodeFlags_DefaultOpen)) {
      if (histogram_) {
        // The histogram as 128 bars over its range, log counts (the object's peak would flatten the rest).
        float bars[128] = {};
        const std::size_t per = histogram_->counts.size() / 128;
        for (std::size_t i = 0; i < histogram_->counts.size(); ++i) bars[std::min<std::size_t>(127, i / per)] += static_cast<float>(histogram_->counts[i]);
        for (float& b : bars) b = std::log1p(b);
        ImGui::PlotHistogram("##histogram", bars, 128, 0, nullptr, 0.0f, FLT_MAX, ImVec2(ImGui::GetContentRegionAvail().x, 60.0f * scale_));
        ImGui::Text("%.4g .. %.4g", histogram_->low, histogram_->high);
      }
      if (ImGui::DragFloatRange2("low, high", &low_, &high_, 0.001f * std::max(1e-3f, high_ - low_) * 10.0f, 0.0f, 0.0f, "%.4f", "%.4f")) {
        autoWindow_ = false;
        dirty3d_ = true;
      }
      mark("high");
      if (ImGui::Button("Object (auto)")) {
        autoWindow_ = true;
        applyAutoWindow();
        lastHistogram_ = Clock::now() - std::chrono::seconds(10);
      }
      mark("object");
      ImGui::SameLine();
      if (ImGui::Button("Whole range") && histogram_) {
        autoWindow_ = false;
        low_ = static_cast<float>(histogram_->percentile(0.005));
        high_ = static_cast<float>(histogram_->percentile(0.995));
        dirty3d_ = true;
      }
      ImGui::SameLine();
      if (ImGui::Button("Wider")) {
        const float c = 0.5f * (low_ + high_), w = high_ - low_;
        low_ = c - w;
        high_ = c + w;
        autoWindow_ = false;
        dirty3d_ = true;
      }
      mark("wider");
      ImGui::Text("%s", autoWindow_ ? "auto: the object's median, 4 interquartile ranges" : "set by hand");
      if (ImGui::Combo("colours", &colourMap_, kColourMaps, static_cast<int>(std::size(kColourMaps)))) dirty3d_ = true;
    }
    if (ImGui::CollapsingHeader("3D view", ImGuiTreeNodeFlags_DefaultOpen)) {
      int mode = style_.mode == VolumeMode::Mip ? 0 : 1;
      ImGui::RadioButton("MIP", &mode, 0);
      ImGui::SameLine();
      ImGui::RadioButton("DVR", &mode, 1);
      if ((mode == 1) != (style_.mode == VolumeMode::Dvr)) dirty3d_ = true;
      style_.mode = mode ? VolumeMode::Dvr : VolumeMode::Mip;
      if (ImGui::Checkbox("auto resolution", &autoResolution_)) dirty3d_ = true;
      if (autoResolution_) {
        ImGui::SameLine();
        ImGui::Text("%.0f%% (%.0f ms)", 100.0 * std::min(autoScale_, 1.0f), 1000.0 * cost3d_);
      } else if (ImGui::SliderFloat("resolution", &resolution3d_, 0.1f, 1.0f, "%.2f")) {
        dirty3d_ = true;
      }
      if (ImGui::Button("Reset view")) {
        camera_ = OrbitCamera{};
        dirty3d_ = true;
      }
      if (style_.mode == VolumeMode::Dvr && ImGui::TreeNode("Transfer function")) {
        if (ImGui::Checkbox("follows the grey window", &transferFollows_)) dirty3d_ = true;
        std::vector<TransferPoint>& tf = style_.transfer;
        for (std::size_t i = 0; i < tf.size(); ++i) {
          ImGui::PushID(static_cast<int>(i));
          ImGui::SetNextItemWidth(90.0f * scale_);
          bool edited = ImGui::DragFloat("##density", &tf[i].density, 0.001f * std::max(1e-3f, high_ - low_) * 10.0f, 0.0f, 0.0f, "%.4f");
          ImGui::SameLine();
          edited |= ImGui::ColorEdit3("##colour", &tf[i].r, ImGuiColorEditFlags_NoInputs);
          ImGui::SameLine();
          ImGui::SetNextItemWidth(80.0f * scale_);
          edited |= ImGui::SliderFloat("##opacity", &tf[i].opacity, 0.0f, 1.0f, "a %.3f");
          if (tf.size() > 2) {
            ImGui::SameLine();
            if (ImGui::SmallButton("x")) {
              tf.erase(tf.begin() + static_cast<std::ptrdiff_t>(i));
              edited = true;
            }
          }
          if (edited) {
            transferFollows_ = false;
            dirty3d_ = true;
          }
          ImGui::PopID();
        }
        if (tf.size() < static_cast<std::size_t>(kMaxTransferPoints) && ImGui::SmallButton("add a point")) {
          TransferPoint p = tf.back();
          p.density += std::max(1e-3f, high_ - low_) * 0.25f;
          tf.push_back(p);
          transferFollows_ = false;
          dirty3d_ = true;
        }
        ImGui::TreePop();
      }
    }
    if (ImGui::CollapsingHeader("Save", ImGuiTreeNodeFlags_DefaultOpen)) {
      ImGui::InputText("volume (.mha)", &volumePath_);
      ImGui::BeginDisabled(!run_ || !run_->done);
      if (ImGui::Button("Save volume")) saveVolume(volumePath_);
      mark("save volume");
      ImGui::EndDisabled();
      ImGui::SameLine();
      if (ImGui::Button("Screenshot")) {
        char name[64];
        std::snprintf(name, sizeof name, "glrecon-app-%04d.png", shots_++);
        pendingShot_ = name;
      }
      mark("screenshot");
      ImGui::InputText("3D series folder", &seriesPath_);
      ImGui::InputInt("frames", &seriesFrames_);
      ImGui::BeginDisabled(!run_);
      if (ImGui::Button("Save the 3D view turning")) saveSeries(seriesPath_, seriesFrames_);
      ImGui::EndDisabled();
    }
    ImGui::Separator();
    ImGui::TextWrapped("Slices: click or drag to move the crosshair, wheel to step. 3D: drag to turn, wheel to zoom. Space: pause.");
    // Space pauses and resumes (not while typing in a field); Ctrl+Q closes, as closing the window does.
    const int spaces = std::exchange(spacePresses, 0);
    if (!ImGui::GetIO().WantTextInput && spaces % 2 == 1 && run_ && !run_->done) run_->paused = !run_->paused;
    if (std::exchange(quitPresses, 0) > 0) window_.requestClose();
    ImGui::End();
  }

  // The method list: FDK, then the iterative methods. Choosing one takes its defaults, as its command's: PDHG-TV 300
  // iterations over the matched pair (its convergence asks for it), the others 10 over the interpolating pair.
  void methodCombo() {
    if (ImGui::BeginCombo("method", kMethodNames[method_])) {
      for (int i = 0; i < static_cast<int>(std::size(kMethodNames)); ++i) {
        if (ImGui::Selectable(kMethodNames[i], i == method_) && i != method_) {
          method_ = i;
          const bool pdhg = chosenMethod() == IterativeMethod::PdhgTv;
          iterations_ = pdhg ? 300 : 10;
          pair_ = pdhg ? ProjectorPair::Matched : ProjectorPair::Interpolating;
        }
        mark((std::string("method ") + kMethodNames[i]).c_str());
      }
      ImGui::EndCombo();
    }
    mark("method");
  }

  // Progress: FDK's projections, projections/s and time left; an iterative method's iteration, its residual (and the
  // curve of them) and time left, at the rate of its steps so far.
  void progressBar(const Run& r) {
    const std::size_t n = r.task->done(), total = r.task->total();
    const double elapsed = r.stepping == Clock::time_point{} ? 0.0 : secondsSince(r.stepping);
    const double rate = r.fdk ? r.fdk->rate() : (elapsed > 0 ? static_cast<double>(n) / elapsed : 0.0);
    const std::string left =
        rate > 0 && n < total ? std::to_string(static_cast<int>(static_cast<double>(total - n) / rate + 0.5)) + " s left" : "starting";
    char overlay[192];
    if (r.fdk) {
      if (r.done) std::snprintf(overlay, sizeof overlay, "%zu/%zu done", n, total);
      else std::snprintf(overlay, sizeof overlay, "%zu/%zu  %.1f/s  %s", n, total, rate, left.c_str());
    } else {
      const IterativeViewTask& t = *r.iterative;
      const IterationRecord& it = t.last();
      const int iterations = t.options().iterations;
      if (r.done)
        std::snprintf(overlay, sizeof overlay, "%zu iterations done, residual %.3g of ||b||", t.report().iterations.size(),
                      t.relative(t.report().finalResidual));
      else if (t.curve().empty())
        std::snprintf(overlay, sizeof overlay, "iteration %d/%d (%d/%d)  %s", std::max(1, it.iteration), iterations, it.subset, it.subsets, left.c_str());
      else
        std::snprintf(overlay, sizeof overlay, "iteration %d/%d (%d/%d)  residual %.3g  %s", it.iteration, iterations, it.subset, it.subsets,
                      t.relative(t.curve().back()), left.c_str());
    }
    ImGui::ProgressBar(total ? static_cast<float>(n) / static_cast<float>(total) : 0.0f, ImVec2(-1, 0), overlay);
    mark("progress");
    if (r.iterative && r.iterative->curve().size() >= 2) {
      // The residual after each iteration, as a fraction of ||b||, on a log scale (it falls by orders of magnitude).
      std::vector<float> logs;
      for (const double residual : r.iterative->curve()) logs.push_back(static_cast<float>(std::log10(std::max(1e-12, r.iterative->relative(residual)))));
      ImGui::PlotLines("##residuals", logs.data(), static_cast<int>(logs.size()), 0, "log10 residual / ||b||", FLT_MAX, FLT_MAX,
                       ImVec2(ImGui::GetContentRegionAvail().x, 40.0f * scale_));
    }
    if (r.paused) ImGui::TextUnformatted("paused");
  }

  // ---- the set-up preview: the grid (and the region) over the first projection ----
  // The first projection of a scan choice, opened again only when the choice changes (a file typed letter by letter is
  // tried once per name; the simulated scanner's rate changes nothing it shows).
  struct Preview {
    ScanChoice choice;
    std::shared_ptr<const Geometry> geometry;
    gl::Texture texture;  // the projection as grey bytes, its lowest value black, its highest white
    std::string error;
    std::exception_ptr failure;
  };

  ScanChoice previewChoice() const {
    ScanChoice choice = scan_;
    choice.rate = 0;
    choice.iterative = chosenMethod().has_value();
    return choice;
  }

  void openPreview(const ScanChoice& choice) {
    Preview p;
    p.choice = choice;
    try {
      OpenedScan scan = setup_.open(choice);
      const DetectorLayout d = scan.source->detector();
      std::vector<float> first(static_cast<std::size_t>(d.nu) * d.nv);
      scan.source->read(0, 1, first.data());
      const auto [lo, hi] = std::minmax_element(first.begin(), first.end());
      const float low = *lo, range = std::max(*hi - *lo, 1e-20f);
      std::vector<unsigned char> rgba(first.size() * 4, 255);
      for (std::size_t i = 0; i < first.size(); ++i) {
        const auto grey = static_cast<unsigned char>(std::lround(std::clamp((first[i] - low) / range, 0.0f, 1.0f) * 255.0f));
        rgba[4 * i] = rgba[4 * i + 1] = rgba[4 * i + 2] = grey;
      }
      p.texture = gl::createTexture(GL_TEXTURE_2D);
      glTextureStorage2D(p.texture.id(), 1, GL_RGBA8, d.nu, d.nv);
      glTextureSubImage2D(p.texture.id(), 0, 0, 0, d.nu, d.nv, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
      // Pixels as blocks, as the slices show voxels: what was measured (and a test can read each pixel back).
      glTextureParameteri(p.texture.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
      glTextureParameteri(p.texture.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
      p.geometry = scan.geometry;
    } catch (const std::exception& e) {
      p.error = e.what();
      p.failure = std::current_exception();
    }
    preview_ = std::move(p);
  }

  // The first projection with, over it, the grid's box (green) and the region's outline (magenta) projected through the
  // first view's matrix (grid_preview.h), v upwards (the world's y, as in the coronal and sagittal slices). The canvas
  // reaches up to a detector's width and height beyond it where the box does, so a grid too large shows how far.
  void previewPanel() {
    if (collapsePreview_) {
      ImGui::SetNextItemOpen(false, ImGuiCond_Always);  // the run's progress and the panels below move up
      collapsePreview_ = false;
    }
    if (!ImGui::TreeNodeEx("preview: the grid over the first projection", ImGuiTreeNodeFlags_DefaultOpen)) return;
    const ScanChoice choice = previewChoice();
    if (!preview_ || !(preview_->choice == choice)) openPreview(choice);
    if (!preview_->error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.4f, 0.3f, 1.0f));
      ImGui::TextWrapped("no preview: %s", preview_->error.c_str());
      ImGui::PopStyleColor();
      ImGui::TreePop();
      return;
    }
    const Geometry& geometry = *preview_->geometry;
    const DetectorLayout& d = geometry.detector;
    const int n = std::clamp(size_, 1, 2048);
    const VolumeGrid grid = VolumeGrid::centred({n, n, n}, glm::dvec3(spacing_ > 0 ? spacing_ : 1.0f));
    const std::vector<DetectorPolyline> box = gridOutline(geometry, 0, grid), region = regionOutline(roi_, geometry, 0);
    // The extent shown, in detector pixels: the detector, and the outlines up to a detector's size beyond it.
    double u0 = -0.5, u1 = d.nu - 0.5, v0 = -0.5, v1 = d.nv - 0.5;
    bool beyond = false, behind = false;
    for (const auto* lines : {&box, &region})
      for (const DetectorPolyline& line : *lines)
        for (const glm::dvec2& p : line) {
          if (!std::isfinite(p.x) || !std::isfinite(p.y)) {
            behind |= lines == &box;  // a corner at or behind the source: no place on the detector
            continue;
          }
          beyond |= lines == &box && (p.x < -0.5 || p.x > d.nu - 0.5 || p.y < -0.5 || p.y > d.nv - 0.5);
          u0 = std::min(u0, std::max(p.x, -0.5 - d.nu));
          u1 = std::max(u1, std::min(p.x, 2.0 * d.nu - 0.5));
          v0 = std::min(v0, std::max(p.y, -0.5 - d.nv));
          v1 = std::max(v1, std::min(p.y, 2.0 * d.nv - 0.5));
        }
    // Pixels on screen per detector pixel along u and v, in the detector's physical aspect, fitted to the panel's width
    // and a third of the window's height.
    const ImVec2 room = ImGui::GetContentRegionAvail();
    const double wide = (u1 - u0) * d.spacingU, high = (v1 - v0) * d.spacingV;
    const double zoom = std::min(room.x / wide, std::min(200.0 * scale_, ImGui::GetIO().DisplaySize.y / 3.0) / high);
    const double su = zoom * d.spacingU, sv = zoom * d.spacingV;
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const ImVec2 canvas(static_cast<float>(wide * zoom), static_cast<float>(high * zoom));
    const double left = std::floor(at.x + 0.5 * (room.x - canvas.x)), top = at.y;
    // Where detector point (u, v) is on the screen (pixel edges at integers): v upwards.
    const auto screen = [&](const glm::dvec2& p) { return ImVec2(static_cast<float>(left + (p.x - u0) * su), static_cast<float>(top + (v1 - p.y) * sv)); };
    const ImVec2 detectorMin = screen({-0.5, d.nv - 0.5}), detectorMax = screen({d.nu - 0.5, -0.5});
    const ImVec2 canvasMin(static_cast<float>(left), static_cast<float>(top)), canvasMax(canvasMin.x + canvas.x, canvasMin.y + canvas.y);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->PushClipRect(canvasMin, canvasMax, true);
    draw->AddRectFilled(canvasMin, canvasMax, IM_COL32(30, 30, 30, 255));
    // Texture row 0 is v = 0: at the bottom.
    draw->AddImage(textureId(preview_->texture.id()), detectorMin, detectorMax, ImVec2(0, 1), ImVec2(1, 0));
    // Dear ImGui draws a line from a + (0.5, 0.5) to b + (0.5, 0.5) (through pixel centres for integer ends): taken
    // back here, so each line lies where its points project.
    const auto stroke = [&](const std::vector<DetectorPolyline>& lines, ImU32 colour) {
      for (const DetectorPolyline& line : lines)
        for (std::size_t i = 1; i < line.size(); ++i) {
          if (!std::isfinite(line[i - 1].x + line[i - 1].y + line[i].x + line[i].y)) continue;
          const ImVec2 a = screen(line[i - 1]), b = screen(line[i]);
          draw->AddLine(ImVec2(a.x - 0.5f, a.y - 0.5f), ImVec2(b.x - 0.5f, b.y - 0.5f), colour, 1.0f);
        }
    };
    stroke(box, kPreviewGridColour);
    stroke(region, kPreviewRegionColour);
    draw->PopClipRect();
    ImGui::Dummy(ImVec2(room.x, canvas.y));
    markRect("preview", detectorMin, detectorMax);
    markRect("preview canvas", canvasMin, canvasMax);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    const std::string what = roi_.empty()          ? ""
                             : !region.empty()     ? ", the ROI magenta"
                             : roi_ == "fov"       ? ", the ROI (fov: what every view sees) not drawn"
                                                   : ", the ROI not drawn (a mask file, or checked at Start)";
    ImGui::TextWrapped("%d x %d pixels; the grid's box green%s%s", d.nu, d.nv, what.c_str(),
                       behind ? "; the box reaches the source (too large for this scan)"
                       : beyond ? "; the box reaches beyond the detector in this view"
                                : "");
    ImGui::PopStyleColor();
    ImGui::TreePop();
  }

  // The backend list, each with the speed --backend auto measured on this GPU for this size of volume (the user cache),
  // and what auto would weigh; read again when the size class changes or a run ends (auto may have measured).
  void backendCombo() {
    const int sizeClassSide = sizeClass(VolumeGrid::centred({std::max(1, size_), std::max(1, size_), std::max(1, size_)}, glm::dvec3(1.0)));
    const bool ended = run_ && run_->done;
    if (sizeClassSide != speedsClass_ || ended != speedsAfterRun_) {
      speeds_ = rememberedSpeeds(window_.context().info(), sizeClassSide);
      speedsClass_ = sizeClassSide;
      speedsAfterRun_ = ended;
    }
    const auto label = [&](int i) {
      std::string text = kBackendNames[i];
      if (speeds_)
        for (const auto& [name, rate] : speeds_->rates)
          if (name == text) {
            char figure[48];
            std::snprintf(figure, sizeof figure, "  (%.3g G voxel-updates/s)", rate * 1e-9);
            text += figure;
          }
      return text;
    };
    if (ImGui::BeginCombo("backend", label(backend_).c_str())) {
      for (int i = 0; i < static_cast<int>(std::size(kBackendNames)); ++i)
        if (ImGui::Selectable(label(i).c_str(), i == backend_)) backend_ = i;
      ImGui::EndCombo();
    }
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    if (chosenMethod())
      ImGui::TextWrapped("%s", window_.context().info().software ? "iterative methods: auto takes cpu on a software renderer"
                                                                 : "iterative methods: auto takes compute (the iterate drawn from its volume)");
    else if (speeds_)
      ImGui::TextWrapped("speeds measured on this GPU by auto, %s, on a %d^3 stand-in", speeds_->date.c_str(), speeds_->side);
    else
      ImGui::TextWrapped("%s", window_.context().info().software ? "a software renderer: auto takes cpu without measuring"
                                                                 : "speeds not measured yet: auto measures them at its first run");
    ImGui::PopStyleColor();
  }

  void saveVolume(const std::string& path) {
    try {
      if (path.empty() || !(path.ends_with(".mha") || path.ends_with(".mhd")))
        throw UsageError("volume: expected a file name ending .mha or .mhd, found '" + path + "'");
      run_->task->saveVolume(path, setup_.overwrite);
      if (!setup_.quiet) std::fprintf(stderr, "app: wrote %s\n", path.c_str());
      status_ = "wrote " + path;
    } catch (const std::exception& e) {
      error_ = e.what();
      std::fprintf(stderr, "app: volume not saved: %s\n", e.what());
    }
  }

  // The 3D view turning once about the vertical axis, `frames` PNGs (view3d_0000.png ...) at its panel's full size.
  void saveSeries(const std::string& folder, int frames) {
    if (!run_ || frames < 1 || panel3d_[0] < 1) return;
    try {
      fs::create_directories(folder);
    } catch (const std::exception& e) {
      error_ = "3D series: " + folder + ": " + e.what();
      return;
    }
    const OrbitCamera keep = camera_;
    const GLuint volume = run_->task->texture(uploader_);
    for (int i = 0; i < frames; ++i) {
      camera_.yaw = keep.yaw + 2.0 * 3.141592653589793 * i / frames;
      renderer3d_.render(volume, grid_, run_->task->scale(), camera_, currentStyle(), panel3d_[0], panel3d_[1]);
      char name[32];
      std::snprintf(name, sizeof name, "view3d_%04d.png", i);
      saveRgb((fs::path(folder) / name).string(), panel3d_[0], panel3d_[1], renderer3d_.readRgb(), i + 1 == frames ? "3D series (last)" : "3D frame");
    }
    camera_ = keep;
    dirty3d_ = true;
  }

  VolumeStyle currentStyle() const {
    VolumeStyle s = style_;
    s.low = low_;
    s.high = high_;
    s.colourMap = colourMap_;
    return s;
  }

  // The fitted rectangle of a `physicalWidth` x `physicalHeight` image centred in the window's content region.
  static std::pair<ImVec2, ImVec2> fit(double physicalWidth, double physicalHeight) {
    const ImVec2 room = ImGui::GetContentRegionAvail(), at = ImGui::GetCursorScreenPos();
    const float zoom = static_cast<float>(std::min(room.x / physicalWidth, room.y / physicalHeight));
    const ImVec2 size(static_cast<float>(physicalWidth) * zoom, static_cast<float>(physicalHeight) * zoom);
    return {ImVec2(at.x + 0.5f * (room.x - size.x), at.y + 0.5f * (room.y - size.y)), size};
  }

  void slicePanel(int which, ImVec2 at, ImVec2 size, GLuint volume, float scale) {
    // Axial: a y slice, x across and z up; coronal: a z slice, x across, y up; sagittal: an x slice, z across, y up.
    static const int axisOf[3] = {1, 2, 0}, acrossOf[3] = {0, 0, 2}, upOf[3] = {2, 1, 1};
    const int axis = axisOf[which], a = acrossOf[which], u = upOf[which];
    char title[160];
    if (run_) {
      const glm::dvec3 mm = grid_.worldOf(cursor_[0], cursor_[1], cursor_[2]);
      std::snprintf(title, sizeof title, "%s   %c = %d / %d   (%+.1f mm)###slice%d", kPanelNames[which], "xyz"[axis], cursor_[axis], grid_.size[axis],
                    mm[axis], which);
    } else {
      std::snprintf(title, sizeof title, "%s###slice%d", kPanelNames[which], which);
    }
    ImGui::SetNextWindowPos(at);
    ImGui::SetNextWindowSize(size);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(2, 2));
    ImGui::Begin(title, nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoScrollbar |
                                     ImGuiWindowFlags_NoScrollWithMouse);
    if (run_) {
      const int across = grid_.size[a], up = grid_.size[u];
      slices_[which].render(sliceProgram_, quad_, volume, grid_.size, scale, axis, cursor_[axis], across, up, low_, high_, colourMap_);
      const auto [corner, shown] = fit(across * grid_.spacing[a], up * grid_.spacing[u]);
      ImGui::SetCursorScreenPos(corner);
      ImGui::Image(textureId(slices_[which].texture.id()), shown, ImVec2(0, 1), ImVec2(1, 0));
      mark(kPanelNames[which]);
      const ImVec2 mouse = ImGui::GetIO().MousePos;
      if (ImGui::IsItemHovered()) {
        if (ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
          cursor_[a] = std::clamp(static_cast<int>((mouse.x - corner.x) / shown.x * static_cast<float>(across)), 0, across - 1);
          cursor_[u] = std::clamp(static_cast<int>((corner.y + shown.y - mouse.y) / shown.y * static_cast<float>(up)), 0, up - 1);
        }
        const float wheel = ImGui::GetIO().MouseWheel;
        if (wheel != 0) cursor_[axis] = std::clamp(cursor_[axis] + (wheel > 0 ? 1 : -1), 0, grid_.size[axis] - 1);
      }
      // The crosshair: the other two panels' slices, through voxel centres.
      const float x = corner.x + (static_cast<float>(cursor_[a]) + 0.5f) / static_cast<float>(across) * shown.x;
      const float y = corner.y + shown.y - (static_cast<float>(cursor_[u]) + 0.5f) / static_cast<float>(up) * shown.y;
      ImDrawList* draw = ImGui::GetWindowDrawList();
      const ImU32 colour = IM_COL32(80, 200, 255, 160);
      draw->AddLine(ImVec2(x, corner.y), ImVec2(x, corner.y + shown.y), colour);
      draw->AddLine(ImVec2(corner.x, y), ImVec2(corner.x + shown.x, y), colour);
    } else {
      ImGui::TextUnformatted("Open a scan and press Start.");
    }
    ImGui::End();
    ImGui::PopStyleVar();
  }

  void view3dPanel(ImVec2 at, ImVec2 size, GLuint volume, float scale) {
    ImGui::SetNextWindowPos(at);
    ImGui::SetNextWindowSize(size);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(2, 2));
    ImGui::Begin(style_.mode == VolumeMode::Mip ? "3D: maximum intensity projection###3d" : "3D: volume rendering###3d", nullptr,
                 ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoScrollbar |
                     ImGuiWindowFlags_NoScrollWithMouse);
    if (run_) {
      const ImVec2 room = ImGui::GetContentRegionAvail();
      panel3d_ = {std::max(8, static_cast<int>(room.x)), std::max(8, static_cast<int>(room.y))};
      // The 3D view is drawn again only when something changed: the view (camera, style, size: at once) or the volume
      // (while projections arrive: at most every --redraw-3d ms, and at most a fifth of the time, so its drawings
      // never pace the frames or the reconstruction sharing its queue). Its cost is its dispatch's GPU time (GL
      // timestamps, read when ready, never waited for). With resolution "auto" its pixels are scaled (down to a
      // quarter of the panel's width) so that one drawing takes about 100 ms: a software renderer gets a coarser view,
      // not a frozen window.
      if (const std::optional<double> gpu = renderer3d_.gpuSeconds()) {
        cost3d_ = *gpu;
        run_->gpu3d += *gpu;
        ++run_->timed3d;
        if (autoResolution_) autoScale_ = std::clamp(autoScale_ * static_cast<float>(std::sqrt(0.1 / std::max(cost3d_, 1e-4))), 0.25f, 1.0f);
      }
      const float fraction = autoResolution_ ? std::min(autoScale_, 1.0f) : resolution3d_;
      const int w = std::max(8, static_cast<int>(room.x * fraction)), h = std::max(8, static_cast<int>(room.y * fraction));
      const bool arriving = !run_->done && !run_->paused;
      const double wait = arriving ? std::max(1e-3 * setup_.redraw3dMs, 4.0 * cost3d_) : 0.0;
      // A new size from auto resolution and a window from the histogram are the app's changes, not the user's: they
      // wait as the volume's do.
      const bool resized = std::abs(w - last3d_[0]) > last3d_[0] / 8 || std::abs(h - last3d_[1]) > last3d_[1] / 8;
      const bool due = (volumeChanged_ || resized) && secondsSince(drawn3d_) >= wait;
      if (dirty3d_ || due) {
        try {
          renderer3d_.render(volume, grid_, scale, camera_, currentStyle(), w, h);
          glFlush();  // started now, not when the frame is presented
          drawn3d_ = Clock::now();
          ++run_->renders3d;
          error3d_.clear();
        } catch (const std::exception& e) {
          error3d_ = e.what();
        }
        last3d_ = {w, h};
        dirty3d_ = false;
        volumeChanged_ = false;
      }
      if (renderer3d_.texture()) {
        ImGui::Image(textureId(renderer3d_.texture()), room, ImVec2(0, 1), ImVec2(1, 0));
        mark("3D");
        if (ImGui::IsItemHovered()) {
          const ImGuiIO& io = ImGui::GetIO();
          if (ImGui::IsMouseDragging(ImGuiMouseButton_Left) && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0)) {
            camera_.rotate(io.MouseDelta.x, io.MouseDelta.y, static_cast<int>(room.y));
            dirty3d_ = true;
          }
          if (io.MouseWheel != 0) {
            camera_.zoomBy(io.MouseWheel);
            dirty3d_ = true;
          }
        }
      }
      if (!error3d_.empty()) ImGui::TextColored(ImVec4(1.0f, 0.4f, 0.3f, 1.0f), "%s", error3d_.c_str());
    }
    ImGui::End();
    ImGui::PopStyleVar();
  }

  // ---- scripts (tests, measurements) ----
  // True once the script is finished: the window is to close.
  bool scripted() {
    // A script's run that failed fails the command (the panel shows it to a user at the window).
    if (failure_ && rethrows()) std::rethrow_exception(failure_);
    if (!run_) return false;
    if (setup_.closeAfter && !run_->done && run_->task->done() >= setup_.closeAfter) return true;
    if (setup_.screenshotAt && !midScanShot_ && !run_->done && run_->task->done() >= setup_.screenshotAt) {
      // Mid-scan (the README's picture): the next frame, the 3D view drawn anew, is saved; the run goes on.
      midScanShot_ = true;
      dirty3d_ = true;
      pendingShot_ = setup_.screenshot;
    }
    if (!run_->done || scriptDone_) return false;
    if (!scriptOutputs()) return setup_.offscreen;
    scriptDone_ = true;
    finalWindowNow();
    if (!setup_.saveVolume.empty()) saveVolume(setup_.saveVolume);
    if (!setup_.series.empty()) saveSeries(setup_.series, setup_.seriesFrames);
    if (!setup_.screenshot.empty() && !midScanShot_) {
      dirty3d_ = true;
      pendingShot_ = setup_.screenshot;
      frame();
    }
    return true;
  }

  bool rethrows() const { return setup_.offscreen || scriptOutputs(); }
  bool scriptOutputs() const { return !setup_.saveVolume.empty() || !setup_.screenshot.empty() || !setup_.series.empty(); }

  const AppSetup& setup_;
  std::exception_ptr failure_;
  ViewWindow window_;
  SliceRenderer uploader_;  // the cpu backend's volume, uploaded (fdk_task.h)
  float scale_ = 1.0f;
  ScanChoice scan_;
  std::vector<std::pair<std::string, std::string>> recent_;
  int backend_ = 0, size_ = 128;
  float spacing_ = 2.0f;
  std::string windowText_ = "auto";
  int method_ = 0, iterations_ = 10;  // method_: kMethodNames' index (0 FDK)
  std::string subsetsText_ = "auto", roi_;
  ProjectorPair pair_ = ProjectorPair::Interpolating;
  std::optional<Preview> preview_;
  bool collapsePreview_ = false;  // a run has started: the preview closes once (the user may open it again)
  VolumeGrid grid_;
  std::unique_ptr<Run> run_;
  std::string status_, error_, error3d_;
  std::array<int, 3> cursor_{0, 0, 0};
  float low_ = 0.0f, high_ = 1.0f;
  bool autoWindow_ = true, transferFollows_ = true, histogramFinal_ = false;
  int colourMap_ = 0;
  std::unique_ptr<VolumeHistogram> histogramGpu_;
  std::optional<Histogram> histogram_;
  Clock::time_point lastHistogram_ = Clock::now();
  gl::Program sliceProgram_;
  gl::VertexArray quad_;
  SliceImage slices_[3];
  VolumeRenderer renderer3d_;
  OrbitCamera camera_;
  VolumeStyle style_;
  float resolution3d_ = 1.0f, autoScale_ = 1.0f;
  bool autoResolution_ = true, dirty3d_ = true, volumeChanged_ = false, scriptDone_ = false, midScanShot_ = false;
  double cost3d_ = 0.0;
  int measuredRounds_ = 0;
  std::vector<double> streamRates_, appRates_, appFrames_;  // --measure's rounds
  Clock::time_point drawn3d_ = Clock::now();
  std::array<int, 2> last3d_{0, 0}, panel3d_{0, 0};
  std::string volumePath_ = "glrecon-app.mha", seriesPath_ = "glrecon-3d", pendingShot_;
  int seriesFrames_ = 36, shots_ = 0;
  std::optional<BackendSpeeds> speeds_;  // the backend list's figures (backendCombo)
  int speedsClass_ = 0;
  bool speedsAfterRun_ = false;
  std::string widgets_;  // this frame's widget rectangles (AppSetup::widgetMap)
  std::size_t mapFrames_ = 0;
};

}  // namespace

void runApp(const AppSetup& setup) {
  if (!setup.saveVolume.empty()) refuseToOverwrite(setup.saveVolume, setup.overwrite);
  if (!setup.screenshot.empty()) refuseToOverwrite(setup.screenshot, setup.overwrite);
  App app(setup);
  app.run();
}

}  // namespace glrecon::viewer
