#include <filesystem>
#include <random>

#include "glrecon/error.h"
#include "glrecon/io.h"

namespace glrecon {
namespace fs = std::filesystem;

void refuseToOverwrite(const std::string& path, bool overwrite) {
  if (!overwrite && fs::exists(path))
    throwInputError(path, "output", "a path that does not exist yet (pass --overwrite to replace it)",
                    "an existing file");
}

AtomicOutput::AtomicOutput(std::string target, bool overwrite) : target_(std::move(target)) {
  refuseToOverwrite(target_, overwrite);
  const fs::path t(target_);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  if (!fs::is_directory(dir)) throwInputError(target_, "output directory", "an existing directory", dir.string());
  std::random_device rd;
  temporary_ = (dir / ("." + t.filename().string() + ".tmp-" + std::to_string(rd()))).string();
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) {
    std::error_code ignored;
    fs::remove(temporary_, ignored);
  }
}

void AtomicOutput::commit() {
  std::error_code error;
  fs::rename(temporary_, target_, error);
  if (error) throwInputError(target_, "output", "a writable location", error.message());
  committed_ = true;
}

}  // namespace glrecon
