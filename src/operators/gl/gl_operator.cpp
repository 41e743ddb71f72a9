#include "operators/gl/gl_operator.h"

#include <chrono>

#include "glrecon/errors.h"

namespace glrecon {
namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

GlOperator::GlOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options, const char* where)
    : ConeBeamOperator(backend, geometry, grid, options), volume_(options.context, geometry, grid, options, where) {}

GlOperator::~GlOperator() {
  // The passes' GL objects go (before the volume's, which holds the context) while their context is current.
  volume_.context().makeCurrent();
}

const gl::DeviceInfo& GlOperator::device() const { return volume_.contextInfo(); }

void GlOperator::drawPending() {
  volume_.flush([this] { drawWindow(); });
}

void GlOperator::requireWholeGrid(const char* what) const {
  if (volume_.blockCapacity > 0)
    throw UsageError(std::string(what) + ": expected an operator of the whole grid (this one was made for blocks of " +
                     std::to_string(volume_.allocatedRows) + " rows)");
}

detail::GlRayPasses& GlOperator::passes() {
  volume_.context().makeCurrent();
  if (!passes_) passes_ = std::make_unique<detail::GlRayPasses>(backend() == Backend::Compute, options_.pair, geometry_, grid_, step_);
  return *passes_;
}

void GlOperator::reset() {
  volume_.reset();
  resetCounters();
  timings_ = {};
}

void GlOperator::moveBlock(int firstRow, int rows) {
  drawPending();  // projections staged for the previous block belong to it
  setBlock(firstRow, rows);
  volume_.moveBlock(firstRow, rows);
  resetCounters();
}

void GlOperator::setVolume(const float* voxels) {
  drawPending();
  glMemoryBarrier(GL_TEXTURE_UPDATE_BARRIER_BIT);  // after image stores into the volume
  glTextureSubImage3D(volume_.volume.id(), 0, 0, 0, 0, grid_.size[0], volume_.rows, grid_.size[2], GL_RED, GL_FLOAT, voxels);
  gl::checkError("uploading the volume");
}

void GlOperator::readVolume(float* destination) {
  drawPending();  // the last, partial window
  volume_.readVolumeInto(destination);
}

// Straight into the whole volume (a slab run's sink): no slab buffer to fault in and copy again. compute on two H100s
// read each 16 GiB slab into a fresh buffer in 2.4-2.7 s and moved it into the volume in 0.5 s more.
bool GlOperator::readBlockInto(float* volume, const std::array<int, 3>& volumeSize, int volumeFirstRow) {
  checkHoldsBlock(volumeSize, volumeFirstRow);
  drawPending();
  volume_.readVolumeInto(volume, volumeSize[1]);
  return true;
}

// On the GPU: a pass over the volume texture (milliseconds), where the host's scan of its copy of a 16 GiB slab took
// 0.18 s after the readback on an H200, and 0.25 s for a 32 GiB block.
std::optional<float> GlOperator::blockLargestMagnitude() {
  drawPending();
  return volume_.largestMagnitude();
}

void GlOperator::back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) {
  if (weighting == Weighting::Fdk) return volume_.add(projections, views, count, [this] { drawWindow(); });
  requireWholeGrid("back (Adjoint)");
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry_.size()) throw std::out_of_range("back: view index beyond the geometry");
  const auto start = std::chrono::steady_clock::now();
  drawPending();
  passes().back(projections, views, count, volume_.volume.id());
  timings_.back += since(start);
}

void GlOperator::forward(const std::size_t* views, std::size_t count, float* projections) {
  requireWholeGrid("forward");
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry_.size()) throw std::out_of_range("forward: view index beyond the geometry");
  const auto start = std::chrono::steady_clock::now();
  drawPending();
  passes().forward(volume_.volume.id(), views, count, projections);
  timings_.forward += since(start);
}

void GlOperator::setUpdateMask(const std::uint8_t* mask) {
  requireWholeGrid("setUpdateMask");
  passes().setMask(mask);
}

void GlOperator::updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                              const float*) {
  requireWholeGrid("updateSubset");
  const auto start = std::chrono::steady_clock::now();
  drawPending();
  passes().updateSubset(volume_.volume.id(), correction, views, count, rule);
  timings_.back += since(start);
}

bool GlOperator::setSubsetData(const float* projections, const float* rayLengths, float rayFloor, bool multiplicative) {
  requireWholeGrid("setSubsetData");
  drawPending();
  return passes().setSubsetData(projections, rayLengths, geometry_.size(), rayFloor, multiplicative);
}

double GlOperator::correctSubset(const std::size_t* views, std::size_t count) {
  requireWholeGrid("correctSubset");
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry_.size()) throw std::out_of_range("correctSubset: view index beyond the geometry");
  const auto start = std::chrono::steady_clock::now();
  drawPending();
  const double squares = passes().correctSubset(volume_.volume.id(), views, count);
  timings_.forward += since(start);
  return squares;
}

void GlOperator::synchronize() {
  volume_.context().makeCurrent();
  glFinish();
}

DeviceProjections* GlOperator::nextWindow() {
  return volume_.nextWindow([this] { drawWindow(); });
}

void GlOperator::back(DeviceProjections&, const std::size_t* views, std::size_t count) {
  volume_.addWindow(views, count, [this] { drawWindow(); });
}

OperatorTimings GlOperator::timings() const {
  OperatorTimings t = timings_;
  t.upload = volume_.profile.upload;
  t.compute = volume_.profile.compute;
  t.readback = volume_.profile.readback;
  return t;
}

}  // namespace glrecon
