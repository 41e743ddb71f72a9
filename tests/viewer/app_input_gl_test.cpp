// `glrecon app` in a window under an X server (Xvfb: ./quickstart.sh test runs the GL tests under xvfb-run), driven by
// real input events: xdotool moves the pointer, clicks and presses keys through the XTEST extension, as a user's mouse
// and keyboard would, and the window is closed by the message a window manager sends when its close button is
// clicked (WM_DELETE_WINDOW). The app writes where its widgets are and its state after every frame (--widget-map), so
// the test knows where to click and when the click has taken effect; what the window shows is checked in its
// screenshots against the volume it saved.
#include <gtest/gtest.h>

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "device_fixtures.h"
#include "glrecon/io.h"
#include "test_config.h"
#include "test_support.h"
#include "png_support.h"

namespace glrecon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using AppInput = test::GlTest;
using test::Png;
using test::readPng;

struct Rect {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  double cx() const { return 0.5 * (x0 + x1); }
  double cy() const { return 0.5 * (y0 + y1); }
};

// The app's state after its last frame (viewer/app.cpp writeWidgetMap).
struct State {
  long frame = 0;
  std::string run = "none";
  std::size_t done = 0, total = 0;
  std::array<int, 3> cursor{};
  double width = 0, height = 0;  // the window's
  double low = 0, high = 0;
  std::string status, error;
  std::string method = "fdk";  // the panel's method (kMethodNames), and an iterative run's iteration
  int iteration = 0;
  std::map<std::string, Rect> widgets;
};

State parseState(const std::string& text) {
  State s;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string key;
    l >> key;
    if (key == "frame") l >> s.frame;
    else if (key == "run") l >> s.run >> s.done >> s.total;
    else if (key == "cursor") l >> s.cursor[0] >> s.cursor[1] >> s.cursor[2];
    else if (key == "display") l >> s.width >> s.height;
    else if (key == "window") l >> s.low >> s.high;
    else if (key == "method") l >> s.method;
    else if (key == "iteration") l >> s.iteration;
    else if (key == "status") s.status = line.size() > 7 ? line.substr(7) : "";
    else if (key == "error") s.error = line.size() > 6 ? line.substr(6) : "";
    else if (key == "widget") {
      const std::size_t bar = line.find('|');
      Rect r;
      std::istringstream(line.substr(bar + 1)) >> r.x0 >> r.y0 >> r.x1 >> r.y1;
      s.widgets[line.substr(7, bar - 7)] = r;
    }
  }
  return s;
}


int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Why the window tests cannot run here ("" when they can): no X display, no Xvfb or no xdotool.
std::string inputUnavailableReason() {
  if (!std::getenv("DISPLAY")) return "no X display: run under xvfb-run (./quickstart.sh test does)";
  if (shell("command -v Xvfb > /dev/null 2>&1") != 0) return "Xvfb is not installed (apt-get install xvfb; ./quickstart.sh installs it)";
  if (shell("command -v xdotool > /dev/null 2>&1") != 0) return "xdotool is not installed (apt-get install xdotool; ./quickstart.sh installs it)";
  return "";
}

// An X server of the test's own (Xvfb on a free display number, which it reports through -displayfd once it accepts
// connections). Under ctest -j2 every test shares the server xvfb-run made: another test's window, mapped at the same
// place and on top, took the clicks and keys meant for this one, and a close test saw its scan run to the end.
class XServer {
 public:
  XServer() {
    int ready[2];
    if (::pipe(ready) != 0) return;
    const std::string fd = std::to_string(ready[1]);  // made before fork: the child only closes, redirects and execs
    const int quiet = ::open("/dev/null", O_WRONLY);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // not left behind (holding ctest's pipes) by a test that crashed
      if (quiet >= 0) {
        ::dup2(quiet, STDOUT_FILENO);  // Xvfb's xkbcomp warnings are not the test's output
        ::dup2(quiet, STDERR_FILENO);
      }
      ::execlp("Xvfb", "Xvfb", "-displayfd", fd.c_str(), "-screen", "0", "1280x1024x24", "-nolisten", "tcp", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (quiet >= 0) ::close(quiet);
    ::close(ready[1]);
    // The display's number and a newline, within 20 s a byte; a number cut short (end of file first) is no name.
    std::string number;
    char c = 0;
    pollfd wait{ready[0], POLLIN, 0};
    for (;;) {
      const int polled = ::poll(&wait, 1, 20000);
      if (polled < 0 && errno == EINTR) continue;
      if (polled != 1) break;
      const ssize_t got = ::read(ready[0], &c, 1);
      if (got < 0 && errno == EINTR) continue;
      if (got != 1) break;
      if (c == '\n') {
        if (!number.empty()) name_ = ":" + number;
        break;
      }
      number += c;
    }
    ::close(ready[0]);
  }
  ~XServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  XServer(const XServer&) = delete;
  XServer& operator=(const XServer&) = delete;
  /// ":N", or "" where Xvfb did not start.
  const std::string& name() const { return name_; }

 private:
  pid_t pid_ = -1;
  std::string name_;
};

// One `glrecon app` process in a window on an X server of its own (or the one given), and the input sent to it.
class DrivenApp {
 public:
  DrivenApp(const fs::path& dir, const std::string& arguments, std::shared_ptr<XServer> server = std::make_shared<XServer>())
      : dir_(dir), map_(dir / "map.txt"), server_(std::move(server)) {
    fs::remove(map_);
    if (server_->name().empty()) {  // no app then: on the shared server it would meet the other tests' windows
      ADD_FAILURE() << "Xvfb did not start: no X server of the test's own";
      return;
    }
    const std::string command = "cd '" + dir.string() + "' && DISPLAY=" + server_->name() + " XDG_CACHE_HOME='" + (dir / "cache").string() +
                                "' exec '" + GLRECON_CLI_PATH + "' app " + arguments + " --widget-map map.txt > app.log 2>&1";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~DrivenApp() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  State state() const {
    std::ifstream in(map_);
    std::stringstream text;
    text << in.rdbuf();
    return parseState(text.str());
  }
  std::string log() const { return test::readText(dir_ / "app.log"); }

  // Waits (up to `seconds`) for a frame drawn after now whose state satisfies `ok`.
  bool waitFor(const std::function<bool(const State&)>& ok, double seconds = 30) {
    const long after = state().frame;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (exited()) return false;
      const State s = state();
      if (s.frame > after && ok(s)) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // The window of this process (its _NET_WM_PID, which GLFW sets) named glrecon. --all: xdotool's search matches any
  // of its conditions by default, so under ctest -j2 (one X server for all tests) another test's app window, also
  // named glrecon, could come first; its keys, clicks and close then went there (a close test saw its own scan run to
  // the end and write its files).
  std::string window() {
    if (window_.empty()) {
      const fs::path out = dir_ / "window.txt";
      for (int i = 0; i < 100 && window_.empty(); ++i) {
        shell(onDisplay("xdotool search --all --pid " + std::to_string(pid_) + " --name '^glrecon$' > '" + out.string() + "' 2>/dev/null"));
        std::istringstream(test::readText(out)) >> window_;
        if (window_.empty()) std::this_thread::sleep_for(100ms);
      }
    }
    return window_;
  }

  // A left click at (x, y) in the window's pixels: the pointer moves there first and rests a few frames, as a hand's.
  int click(double x, double y) {
    const std::string move = "xdotool mousemove --sync --window " + window() + " " + std::to_string(static_cast<int>(std::lround(x))) + " " +
                             std::to_string(static_cast<int>(std::lround(y)));
    const int moved = shell(onDisplay(move));
    std::this_thread::sleep_for(150ms);
    return moved | shell(onDisplay("xdotool click 1"));
  }
  // A click on `widget`; where the side panel has scrolled it out of the window, the wheel over the panel first brings
  // it in, as a user scrolls to it.
  int click(const std::string& widget) {
    for (int scrolls = 0; scrolls < 40; ++scrolls) {
      const State s = state();
      const auto w = s.widgets.find(widget);
      if (w == s.widgets.end()) return -1;
      if (w->second.y0 >= 0 && w->second.y1 <= s.height - 2) return click(w->second.cx(), w->second.cy());
      const std::string wheel = w->second.y0 < 0 ? "4" : "5";  // up, down
      if (shell(onDisplay("xdotool mousemove --sync --window " + window() + " 40 " + std::to_string(static_cast<int>(s.height / 2)) + " click " + wheel)) != 0)
        return -1;
      waitFor([](const State&) { return true; });  // a frame drawn after the scroll
    }
    return -1;
  }
  // A key held down as long as a hand holds it (Dear ImGui 1.86 reads keys as held or not at each frame: a press and
  // release between two frames, which only a program can do, would go unseen).
  // Text typed into the field with the keyboard focus, a character at a time as a hand types.
  int type(const std::string& text) {
    shell(onDisplay("xdotool windowfocus --sync " + window() + " 2>/dev/null"));
    return shell(onDisplay("xdotool type --delay 60 '" + text + "'"));
  }
  int key(const std::string& name) {
    shell(onDisplay("xdotool windowfocus --sync " + window() + " 2>/dev/null"));
    const int down = shell(onDisplay("xdotool keydown " + name));
    std::this_thread::sleep_for(150ms);
    return down | shell(onDisplay("xdotool keyup " + name));
  }

  // What a window manager sends when the user clicks the window's close button.
  bool closeAsAWindowManagerWould() {
    if (server_->name().empty()) return false;  // XOpenDisplay("") would open $DISPLAY, the shared server
    Display* display = XOpenDisplay(server_->name().c_str());
    if (!display) return false;
    XEvent event{};
    event.xclient.type = ClientMessage;
    event.xclient.window = static_cast<Window>(std::stoul(window()));
    event.xclient.message_type = XInternAtom(display, "WM_PROTOCOLS", False);
    event.xclient.format = 32;
    event.xclient.data.l[0] = static_cast<long>(XInternAtom(display, "WM_DELETE_WINDOW", False));
    event.xclient.data.l[1] = CurrentTime;
    const Status sent = XSendEvent(display, event.xclient.window, False, NoEventMask, &event);
    XCloseDisplay(display);  // flushes
    return sent != 0;
  }

  bool exited() {
    if (!exited_ && ::waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return exited_;
  }
  // The exit code once the process has ended (within `seconds`), else -1.
  int exitCode(double seconds = 30) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!exited() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
    return exited_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }

 private:
  // A command run with the app's X server as its display.
  std::string onDisplay(const std::string& command) const { return "DISPLAY=" + server_->name() + " " + command; }

  fs::path dir_, map_;
  std::shared_ptr<XServer> server_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool exited_ = false;
  std::string window_;
};

fs::path freshDir(const std::string& name) {
  const fs::path dir = test::scratchDir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The screen pixel showing voxel (across, up) of a slice panel whose image fills `r` (voxel centres).
std::pair<int, int> pixelOf(const Rect& r, int across, int up, int acrossCount, int upCount) {
  const double x = r.x0 + (across + 0.5) / acrossCount * (r.x1 - r.x0), y = r.y1 - (up + 0.5) / upCount * (r.y1 - r.y0);
  return {static_cast<int>(std::floor(x)), static_cast<int>(std::floor(y))};
}

// Start, pause, a crosshair moved by a click in the axial slice, the grey window widened, resume, save the volume and
// a screenshot: every step by the mouse or the keyboard, each checked in the app's state, and the screenshot against
// the saved volume (the axial slice through the crosshair, in the grey window set, and the crosshair where clicked).
TEST_F(AppInput, MouseAndKeysStartPauseMoveTheCrosshairWidenTheWindowAndSave) {
  if (const std::string reason = inputUnavailableReason(); !reason.empty()) GTEST_SKIP() << reason;
  const fs::path dir = freshDir("app-input");
  constexpr int n = 24;  // voxels per axis
  DrivenApp app(dir, "--simulate 60 --size 24 --spacing 10 --backend compute --resolution 1024x700");
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.widgets.count("start") > 0; })) << app.log();
  ASSERT_FALSE(app.window().empty()) << "no window of the app's process found by xdotool";

  // Start (a click on the button).
  ASSERT_EQ(app.click("start"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "running" && s.done > 0; })) << app.log();

  // Pause (the space bar): the count stops.
  ASSERT_EQ(app.key("space"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "paused"; })) << app.log();
  const std::size_t pausedAt = app.state().done;
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(app.state().done, pausedAt) << "projections were added while paused";
  EXPECT_LT(pausedAt, 360u);

  // The crosshair: a click on voxel (x 5, z 17) of the axial slice (a y slice: x across, z up); y stays.
  const State before = app.state();
  ASSERT_TRUE(before.widgets.count("Axial")) << "the axial slice is not shown";
  const Rect axial = before.widgets.at("Axial");
  const auto [px, py] = pixelOf(axial, 5, 17, n, n);
  ASSERT_EQ(app.click(px + 0.5, py + 0.5), 0);
  ASSERT_TRUE(app.waitFor([&](const State& s) { return s.cursor[0] == 5 && s.cursor[2] == 17; })) << "cursor " << app.state().cursor[0] << " "
                                                                                                   << app.state().cursor[2];
  EXPECT_EQ(app.state().cursor[1], before.cursor[1]);

  // The grey window: "Wider" doubles it about its centre. The automatic window settles on the paused volume first: its
  // histogram's passes are issued a frame apart, so the last one can land after the pause (under load it did, between
  // this read and the click); it is read once unchanged for a second and a half (three reads: under the sanitizers with
  // ctest -j2 beside a build, one unchanged half second still let a late pass through).
  State unwidened = app.state();
  for (int tries = 0, unchanged = 0; tries < 90 && unchanged < 3; ++tries) {
    std::this_thread::sleep_for(500ms);
    const State now = app.state();
    unchanged = (now.low == unwidened.low && now.high == unwidened.high) ? unchanged + 1 : 0;
    unwidened = now;
  }
  ASSERT_EQ(app.click("wider"), 0);
  ASSERT_TRUE(app.waitFor([&](const State& s) { return std::fabs((s.high - s.low) - 2 * (unwidened.high - unwidened.low)) < 1e-4; }))
      << unwidened.low << " " << unwidened.high << " -> " << app.state().low << " " << app.state().high;
  const State widened = app.state();
  EXPECT_NEAR(0.5 * (widened.low + widened.high), 0.5 * (unwidened.low + unwidened.high), 1e-5);

  // Resume (space again) until done; the window set by hand stays.
  ASSERT_EQ(app.key("space"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "done"; }, 60)) << app.log();
  EXPECT_EQ(app.state().done, 360u);
  EXPECT_EQ(app.state().low, widened.low);
  EXPECT_EQ(app.state().high, widened.high);

  // Save the volume, then a screenshot (the buttons).
  ASSERT_EQ(app.click("save volume"), 0);
  ASSERT_TRUE(app.waitFor([&](const State&) { return fs::exists(dir / "glrecon-app.mha"); })) << app.log();
  ASSERT_EQ(app.click("screenshot"), 0);
  ASSERT_TRUE(app.waitFor([&](const State&) { return fs::exists(dir / "glrecon-app-0000.png"); })) << app.log();
  const State last = app.state();

  // Closed by its window's close button: a clean exit.
  ASSERT_TRUE(app.closeAsAWindowManagerWould());
  EXPECT_EQ(app.exitCode(), 0) << app.log();

  // The screenshot shows the axial slice y = cursor of the saved volume through the window set, voxel for voxel (the
  // slice's texels are bytes of the same grey: within 1 level), except under the crosshair, which is where clicked.
  const Image v = readMetaImage((dir / "glrecon-app.mha").string());
  const Png shot = readPng(dir / "glrecon-app-0000.png");
  ASSERT_EQ(shot.width, 1024);
  ASSERT_EQ(shot.height, 700);
  const Rect a = last.widgets.at("Axial");
  const int y = last.cursor[1];
  int worst = 0, compared = 0, bright = 0;
  for (int k = 0; k < n; ++k)
    for (int i = 0; i < n; ++i) {
      if (i == 5 || k == 17) continue;  // under the crosshair's lines
      const auto [sx, sy] = pixelOf(a, i, k, n, n);
      const double t = std::clamp((v.at(i, y, k) - last.low) / (last.high - last.low), 0.0, 1.0);
      const int expected = static_cast<int>(std::lround(t * 255.0));
      for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(shot.at(sx, sy)[c] - expected));
      bright += expected > 128;
      ++compared;
    }
  EXPECT_LE(worst, 1) << "of " << compared << " voxels";
  EXPECT_GT(bright, 10) << "the phantom shows in the window set";
  // The crosshair's vertical line through voxel column x = 5 (blue over grey), away from its horizontal line.
  const auto [lineX, lineY] = pixelOf(a, 5, 17, n, n);
  int blue = 0, rows = 0;
  for (int k = 0; k < n; k += 3) {
    if (std::abs(k - 17) < 2) continue;
    const int sy = pixelOf(a, 5, k, n, n).second;
    int best = 0;
    for (int dx = -1; dx <= 1; ++dx) best = std::max(best, shot.at(lineX + dx, sy)[2] - shot.at(lineX + dx, sy)[0]);
    blue += best > 60;
    ++rows;
  }
  EXPECT_EQ(blue, rows) << "the crosshair's vertical line at x " << lineX;
  (void)lineY;
}

// An iterative method set up and run with the mouse and keyboard: SART chosen from the method list; a malformed ROI
// typed into its field refused at Start, named in red, nothing started; the field cleared, SART runs (its iterate
// drawn after every subset), space pauses it (the subsets stop), space resumes it, Stop stops it with nothing written.
// A scan opened from the panel as a user opens one: "files" chosen, the geometry's and the projections' paths typed,
// Start; the 12-projection scan from the files is reconstructed (the simulated scanner's has 360) and remembered among
// the recent scans.
TEST_F(AppInput, AScanOpenedByTypingItsPathsIsReconstructedAndRemembered) {
  if (const std::string reason = inputUnavailableReason(); !reason.empty()) GTEST_SKIP() << reason;
  const fs::path dir = freshDir("app-input-open");
  ASSERT_EQ(shell("cd '" + dir.string() + "' && '" + GLRECON_CLI_PATH + "' phantom -o scan --projections 12 --detector 48 --detector-spacing 6 -q"), 0);
  DrivenApp app(dir, "--size 16 --spacing 12 --backend cpu --resolution 1024x800");
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.widgets.count("files") > 0; })) << app.log();
  ASSERT_FALSE(app.window().empty()) << "no window of the app's process found by xdotool";
  ASSERT_EQ(app.click("files"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.widgets.count("geometry") > 0 && s.widgets.count("projections") > 0; }))
      << "the files' fields did not appear";
  ASSERT_EQ(app.click("geometry"), 0);
  ASSERT_EQ(app.type("scan/geometry.xml"), 0);
  ASSERT_EQ(app.click("projections"), 0);
  ASSERT_EQ(app.type("scan/projections.mha"), 0);
  // The scan opens as its paths are typed: the preview of the grid over its first projection appears above Start and
  // moves it down; Start is clicked where two frames in a row put it.
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.widgets.count("preview") > 0; })) << "the typed scan was not opened: " << app.log();
  Rect start = app.state().widgets.at("start");
  ASSERT_TRUE(app.waitFor([&](const State& s) {
    const auto w = s.widgets.find("start");
    if (w == s.widgets.end()) return false;
    const bool settled = w->second.y0 == start.y0 && w->second.y1 == start.y1;
    start = w->second;
    return settled;
  })) << "Start did not settle";
  ASSERT_EQ(app.click("start"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "done"; }, 60)) << app.state().run << " " << app.state().error << "\n" << app.log();
  EXPECT_EQ(app.state().total, 12u) << "not the files' scan";
  EXPECT_EQ(app.state().done, 12u);
  EXPECT_EQ(app.state().error, "");
  const std::string recent = test::readText(dir / "cache" / "glrecon" / "recent_scans.txt");
  EXPECT_TRUE(test::contains(recent, "scan/geometry.xml ; scan/projections.mha")) << recent;
}

// An X server's resource database (the root window's RESOURCE_MANAGER), where GLFW reads Xft.dpi for a window's
// content scale: set for the test's apps, put back as it was when the test ends.
class ServerResources {
 public:
  // None of the shared server's ($DISPLAY's, which XOpenDisplay("") opens): open() is false without a server's name.
  explicit ServerResources(const XServer& server) : display_(server.name().empty() ? nullptr : XOpenDisplay(server.name().c_str())) {
    if (!display_) return;
    atom_ = XInternAtom(display_, "RESOURCE_MANAGER", False);
    Atom type = None;
    int format = 0;
    unsigned long items = 0, after = 0;
    unsigned char* data = nullptr;
    if (XGetWindowProperty(display_, DefaultRootWindow(display_), atom_, 0, 1 << 20, False, XA_STRING, &type, &format, &items, &after, &data) ==
            Success && data) {
      had_ = true;
      old_.assign(reinterpret_cast<const char*>(data), items);
      XFree(data);
    }
  }
  ~ServerResources() {
    if (!display_) return;
    if (had_) set(old_);
    else XDeleteProperty(display_, DefaultRootWindow(display_), atom_);
    XCloseDisplay(display_);
  }
  bool open() const { return display_ != nullptr; }
  void set(const std::string& text) {
    XChangeProperty(display_, DefaultRootWindow(display_), atom_, XA_STRING, 8, PropModeReplace,
                    reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    XSync(display_, False);
  }

 private:
  Display* display_ = nullptr;
  Atom atom_ = None;
  bool had_ = false;
  std::string old_;
};

// Panels follow the screen's scale: on a screen of 192 dpi (Xft.dpi, which GLFW turns into a content scale of 2, as a
// HiDPI desktop sets it) the side panel's buttons are twice as tall as at 96 dpi. A button is the font's height plus
// twice the frame's padding, both scaled (13 + 2 x 3 = 19 pixels at 1, 26 + 2 x 6 = 38 at 2): the ratio is 2 up to
// a pixel of rounding in either height, so within 2 +- 3/19.
TEST_F(AppInput, PanelsFollowTheScreensScale) {
  if (const std::string reason = inputUnavailableReason(); !reason.empty()) GTEST_SKIP() << reason;
  const auto server = std::make_shared<XServer>();  // the apps' own: the resources of no other test's server change
  ServerResources resources(*server);
  ASSERT_TRUE(resources.open());
  double heights[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    resources.set(i == 0 ? "Xft.dpi:\t96\n" : "Xft.dpi:\t192\n");
    const fs::path dir = freshDir(i == 0 ? "app-input-dpi96" : "app-input-dpi192");
    DrivenApp app(dir, "--simulate 0 --size 16 --spacing 12 --backend cpu --resolution 1280x1000", server);
    ASSERT_TRUE(app.waitFor([](const State& s) { return s.widgets.count("start") > 0; })) << app.log();
    const Rect start = app.state().widgets.at("start");
    heights[i] = start.y1 - start.y0;
  }
  EXPECT_NEAR(heights[0], 19.0, 1.0) << "the button's height at scale 1";
  EXPECT_NEAR(heights[1] / heights[0], 2.0, 3.0 / 19.0) << heights[0] << " and " << heights[1] << " pixels";
}

TEST_F(AppInput, IterativeMethodChosenAndRunWithPauseResumeAndStop) {
  if (const std::string reason = inputUnavailableReason(); !reason.empty()) GTEST_SKIP() << reason;
  const fs::path dir = freshDir("app-input-iterative");
  // 32^3 on cpu from the simulated scanner's 90 views: SART's 900 subsets (10 iterations of one view) take seconds.
  DrivenApp app(dir, "--simulate 0 --size 32 --spacing 8 --backend cpu --resolution 1200x1000");
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.widgets.count("method") > 0; })) << app.log();
  ASSERT_FALSE(app.window().empty()) << "no window of the app's process found by xdotool";

  // The method list opens, SART is chosen.
  ASSERT_EQ(app.click("method"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.widgets.count("method sart") > 0; })) << "the method list did not open";
  // A popup is laid out over its first frames (Dear ImGui sizes it to its items, then places it): its items are clicked
  // where two frames in a row put them.
  Rect last = app.state().widgets.at("method sart");
  ASSERT_TRUE(app.waitFor([&](const State& s) {
    const auto w = s.widgets.find("method sart");
    if (w == s.widgets.end()) return false;
    const bool settled = w->second.x0 == last.x0 && w->second.y0 == last.y0 && w->second.x1 == last.x1 && w->second.y1 == last.y1;
    last = w->second;
    return settled;
  })) << "the method list did not settle";
  ASSERT_EQ(app.click("method sart"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.method == "sart"; })) << app.state().method;

  // A malformed ROI: Start names the field and what it expected, in red (the panel's error colour, 255 102 77 on the
  // dark panel), and nothing starts.
  ASSERT_EQ(app.click("roi"), 0);
  ASSERT_EQ(app.type("sphere:1,2"), 0);
  ASSERT_EQ(app.click("start"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return test::contains(s.error, "roi: expected 4 numbers after the shape name, found 'sphere:1,2'"); }))
      << app.state().error;
  EXPECT_EQ(app.state().run, "none");
  ASSERT_TRUE(app.state().widgets.count("error"));
  const Rect errorText = app.state().widgets.at("error");
  ASSERT_EQ(app.click("screenshot"), 0);
  ASSERT_TRUE(app.waitFor([&](const State&) { return fs::exists(dir / "glrecon-app-0000.png"); })) << app.log();
  const Png shot = readPng(dir / "glrecon-app-0000.png");
  ASSERT_GT(shot.width, 0);
  int red = 0;
  for (int y = static_cast<int>(errorText.y0); y < errorText.y1; ++y)
    for (int x = static_cast<int>(errorText.x0); x < errorText.x1; ++x) red += shot.at(x, y)[0] - shot.at(x, y)[1] > 80;
  EXPECT_GT(red, 50) << "the error is not shown in red";

  // The field cleared (select all, delete): SART runs, subset by subset.
  ASSERT_EQ(app.click("roi"), 0);
  ASSERT_EQ(app.key("ctrl+a"), 0);
  ASSERT_EQ(app.key("BackSpace"), 0);
  ASSERT_EQ(app.click("start"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "running" && s.done > 0; })) << app.log() << app.state().error;
  EXPECT_EQ(app.state().total, 900u);  // 10 iterations of 90 subsets

  // Pause (space): no subset more.
  ASSERT_EQ(app.key("space"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "paused"; })) << app.log();
  const std::size_t pausedAt = app.state().done;
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(app.state().done, pausedAt) << "subsets were done while paused";
  EXPECT_LT(pausedAt, 900u);

  // Resume (space): more subsets, into the second iteration; then Stop (the button): nothing written.
  ASSERT_EQ(app.key("space"), 0);
  ASSERT_TRUE(app.waitFor([&](const State& s) { return s.run == "running" && s.done >= pausedAt + 20 && s.iteration >= 2; })) << app.log();
  ASSERT_EQ(app.click("stop"), 0);
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "none" && s.status == "stopped"; })) << app.log();
  EXPECT_TRUE(test::contains(app.log(), "app: stopped after ")) << app.log();
  EXPECT_TRUE(test::contains(app.log(), " of 900 subsets: nothing written")) << app.log();
  EXPECT_TRUE(test::contains(app.log(), "app: sart iteration 1/10: residual")) << app.log();

  ASSERT_TRUE(app.closeAsAWindowManagerWould());
  EXPECT_EQ(app.exitCode(), 0) << app.log();
  EXPECT_FALSE(fs::exists(dir / "glrecon-app.mha"));
}

// Closing the window (its close button, as a window manager sends it) mid-scan: the reconstruction is cancelled, the
// process exits cleanly, and none of what the script would have saved at the end is written.
TEST_F(AppInput, ClosingTheWindowMidScanCancelsAndWritesNothing) {
  if (const std::string reason = inputUnavailableReason(); !reason.empty()) GTEST_SKIP() << reason;
  const fs::path dir = freshDir("app-input-close");
  DrivenApp app(dir, "--simulate 60 --size 24 --spacing 10 --backend compute --resolution 900x600 --start -o v.mha --screenshot s.png");
  ASSERT_TRUE(app.waitFor([](const State& s) { return s.run == "running" && s.done >= 30; })) << app.log();
  ASSERT_FALSE(app.window().empty());
  ASSERT_TRUE(app.closeAsAWindowManagerWould());
  EXPECT_EQ(app.exitCode(), 0) << app.log();
  const std::string log = app.log();
  EXPECT_TRUE(test::contains(log, "window closed after")) << log;
  EXPECT_TRUE(test::contains(log, "reconstruction cancelled, nothing written")) << log;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
  EXPECT_FALSE(fs::exists(dir / "s.png"));
  EXPECT_FALSE(fs::exists(dir / "glrecon-app-0000.png"));
}

}  // namespace
}  // namespace glrecon
