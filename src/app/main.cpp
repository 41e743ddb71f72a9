// glrecon's entry point: builds the command line from the command objects (command.h), runs the one asked for, and
// maps errors to exit codes: 0 success, 1 failure, 2 usage error (130 and 143 interrupted, by the signal handlers).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.h"
#include "glrecon/cluster.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/progress.h"
#include "option_checks.h"
#include "options.h"

namespace glrecon::app {
namespace {

// In --help's order.
std::vector<std::unique_ptr<Command>> makeCommands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(makeDevicesCommand());
  commands.push_back(makeBenchCommand());
  commands.push_back(makeScanSimCommand());
  commands.push_back(makeViewCommand());
#ifdef GLRECON_HAVE_APP
  commands.push_back(makeAppCommand());
#endif
  commands.push_back(makeProjectCommand());
  for (IterativeMethod method : {IterativeMethod::Sart, IterativeMethod::Sirt, IterativeMethod::Cgls, IterativeMethod::Osem, IterativeMethod::AsdPocs,
                                   IterativeMethod::PdhgTv})
    commands.push_back(makeIterativeMethodCommand(method));
  commands.push_back(makeCompareCommand());
  commands.push_back(makeBenchIterativeCommand());
  commands.push_back(makePhantomCommand());
  commands.push_back(makeFdkCommand());
  commands.push_back(makeDemoCommand());
  commands.push_back(makeSliceCommand());
  return commands;
}

// GL_OUT_OF_MEMORY from a driver: say what it means.
std::string explainGlError(const std::string& text) {
  if (text.find("0x505") == std::string::npos) return "";
  return " (GL_OUT_OF_MEMORY: the GPU has too little memory for this volume; try a smaller --size or --backend cpu)";
}

// Parses the command line and runs the command (its callback); every error becomes a message (on `std::cerr`, the
// stream given) and an exit code.
int parseAndRun(CLI::App& app, int argc, char** argv, std::ostream& errors) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const UsageError& e) {
    errors << "glrecon: usage error: " << e.render(optionName) << "\n";
    return 2;
  } catch (const Error& e) {
    errors << "glrecon: error: " << e.render(optionName) << explainGlError(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // What the budget checks did not foresee (they count the main arrays only).
    errors << "glrecon: error: out of memory: the job needs more than the " << formatBytes(availableHostMemory())
              << " available; try a smaller --size, --detector or fewer projections\n";
    return 1;
  } catch (const std::length_error&) {
    errors << "glrecon: error: out of memory: a size computed from the input exceeds what can be allocated; check "
                 "--size, --detector and the input headers\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    errors << "glrecon: error: " << e.path1().string() << ": " << e.code().message() << "\n";
    return 1;
  } catch (const std::exception& e) {
    errors << "glrecon: error: " << e.what() << explainGlError(e.what()) << "\n";
    return 1;
  }
  return 0;
}

// Under mpirun with several ranks fdk and the iterative methods share their work out; any other command would run once
// per rank, each copy writing the same outputs: refused, naming the command ("" where there is nothing to refuse).
std::string notSharedOut(int argc, char** argv) {
  const Cluster* cluster = currentCluster();
  if (!cluster || cluster->size() == 1) return "";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') continue;
    for (const char* shared : {"fdk", "sart", "sirt", "cgls", "osem", "asd-pocs", "pdhg-tv"})
      if (word == shared) return "";
    return "'" + word + "' under mpirun with " + std::to_string(cluster->size()) + " ranks: only fdk and the iterative methods (sart, "
           "sirt, cgls, osem, asd-pocs, pdhg-tv) share their work out over MPI ranks; run it as one process";
  }
  return "";
}

int run(int argc, char** argv) {
  CLI::App app{"glrecon: cone-beam CT reconstruction: FDK through the OpenGL graphics pipeline, OpenGL compute shaders, CUDA or\n"
               "the CPU; iterative methods (SART, SIRT, CGLS, OS-EM); a live viewer of the slices as projections arrive.\n"
               "Geometry and projections follow RTK's conventions, so RTK files work as they are."};
  app.set_version_flag("--version", "glrecon 0.1.0");
  app.require_subcommand(1);
  const std::vector<std::unique_ptr<Command>> commands = makeCommands();
  for (const auto& command : commands) command->add(app);
  addOptionChecks(app);
  // CLI11's own errors (a value out of bounds, a missing option) in the words of every other usage error, so that
  // scripts and the Python bindings' tests find one prefix.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "glrecon: usage error: " + std::string(e.what()) + "\nRun with --help for more information.\n";
  });
  // Outputs written in this run are staged or temporary until complete: a signal removes them.
  installCleanupSignalHandlers();
  if (const std::string unknown = unknownSubcommand(app, argc, argv); !unknown.empty()) {
    std::cerr << "glrecon: usage error: " << unknown << "\nRun with --help for more information.\n";
    return 2;
  }
  // Under mpirun (glrecon/cluster.h) a failing rank stops every rank, naming itself; elsewhere the message and the code.
  std::ostringstream errors;
  int code = 0;
  if (const std::string refused = notSharedOut(argc, argv); !refused.empty()) {
    errors << "glrecon: usage error: " << refused << "\n";
    code = 2;
  } else {
    code = parseAndRun(app, argc, argv, errors);
  }
  if (code != 0) abortCluster(errors.str(), code);
  std::cerr << errors.str();
  return code;
}

}  // namespace
}  // namespace glrecon::app

int main(int argc, char** argv) {
  glrecon::trace("main: started");
  try {
    glrecon::startCluster(&argc, &argv);
    glrecon::trace("main: MPI started, if under mpirun");
  } catch (const glrecon::UsageError& e) {
    std::cerr << "glrecon: usage error: " << e.what() << "\n";
    return 2;
  }
  const int code = glrecon::app::run(argc, argv);
  glrecon::trace("main: ending MPI, if under mpirun");
  glrecon::endCluster();
  glrecon::trace("main: ended");
  return code;
}
