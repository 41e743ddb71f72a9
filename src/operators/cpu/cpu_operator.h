#pragma once
// The multithreaded CPU operator (see cpu_operator.cpp). Internal to src/operators: made through makeOperator.
#include <cstdint>
#include <utility>
#include <vector>

#include "glrecon/image.h"
#include "glrecon/operator.h"
#include "operators/projector_views.h"

namespace glrecon {

class CpuOperator final : public ConeBeamOperator {
 public:
  CpuOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options);
  std::string description() const override { return "cpu"; }
  void reset() override;
  void moveBlock(int firstRow, int rows) override;
  void setVolume(const float* voxels) override;
  void readVolume(float* destination) override;
  bool readBlockInto(float* volume, const std::array<int, 3>& volumeSize, int volumeFirstRow) override;
  void back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) override;
  void forward(const std::size_t* views, std::size_t count, float* projections) override;
  void setUpdateMask(const std::uint8_t* mask) override;
  void updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                    const float* cachedWeights) override;
  void setRegion(const RegionOfInterest& region) override;
  void killOutsideRange(double low, double high, double scale) override;
  std::vector<std::uint8_t> activeMask() override { return active_; }
  double culledFraction() const override { return updatesTotal_ > 0 ? updatesSkipped_ / updatesTotal_ : 0.0; }

 private:
  void fdkBack(const float* projections, const std::size_t* views, std::size_t count);
  void adjointBack(const float* projections, const std::size_t* views, std::size_t count, float* volume);
  void transposeBack(const float* projections, const std::size_t* views, std::size_t count, float* volume);
  /// The distance-driven pair (plane_gather.h's ddForward and ddGather, as the cuda kernels run them).
  void distanceDrivenForward(const std::size_t* views, std::size_t count, float* projections);
  void distanceDrivenBack(const float* projections, const std::size_t* views, std::size_t count, float* volume);
  /// B of the pair chosen (OperatorOptions::pair) into `volume`.
  void pairBack(const float* projections, const std::size_t* views, std::size_t count, float* volume) {
    if (options_.pair == ProjectorPair::Matched) return transposeBack(projections, views, count, volume);
    if (options_.pair == ProjectorPair::DistanceDriven) return distanceDrivenBack(projections, views, count, volume);
    adjointBack(projections, views, count, volume);
  }

  int threads_;
  int nu_, nv_;
  Image volume_;  // the block held
  std::vector<detail::ProjectorView> views_;
  // Fdk back's region: the active voxels, per x-row the span holding them, and whether a span has inactive voxels.
  std::vector<std::uint8_t> active_;
  std::vector<std::pair<int, int>> spans_;
  std::vector<std::uint8_t> rowPartial_;
  double updatesSkipped_ = 0, updatesTotal_ = 0;
  bool killed_ = false;
  std::vector<float> padded_;  // Fdk back: projections with a zero border, 1 pixel before, 2 after, on both axes
  // updateSubset: B_S(c), B_S(1), a projection of ones, and the update mask.
  std::vector<float> update_, weights_, ones_;
  const std::uint8_t* mask_ = nullptr;
};

}  // namespace glrecon
