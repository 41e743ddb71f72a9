// glrecon devices: the GPUs (EGL devices) the GPU backends can use, for --gpu.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/command.h"
#include "device/gl/context.h"

namespace glrecon::app {
namespace {

class DevicesCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("devices", "List the GPUs (EGL devices) the GPU backends can use, for --gpu");
    c->callback([] { run(); });
  }

 private:
  static void run() {
    for (const gl::DeviceInfo& d : gl::Context::listDevices()) {
      std::printf("%d: %s%s%s%s", d.index, d.renderer.c_str(), d.version.empty() ? "" : " | OpenGL ", d.version.c_str(),
                  d.software ? " (software renderer)" : "");
      if (d.varyingComponents > 0)
        std::printf(" | largest graphics window %d (%d varying components)", d.varyingComponents / 3, d.varyingComponents);
      std::printf("\n");
    }
  }
};

}  // namespace

std::unique_ptr<Command> makeDevicesCommand() { return std::make_unique<DevicesCommand>(); }

}  // namespace glrecon::app
