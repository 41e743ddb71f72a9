// The split operator (glrecon/split.h): parts of y rows on this process's devices and on other MPI ranks, summed in a
// fixed order. A process's GPU parts are called at once, a thread each (each call sets its device); cpu parts one
// after another (each takes every core).
#include "glrecon/split.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>
#include <thread>
#include <string>

#include "glrecon/cluster.h"
#include "glrecon/errors.h"
#include "glrecon/parallel.h"
#include "glrecon/slab.h"

namespace glrecon {

std::vector<int> splitRows(int rows, int parts) {
  const int granules = (rows + kSlabGranule - 1) / kSlabGranule;
  if (parts < 1 || parts > granules)
    throw UsageError(field("slabs") + ": expected 1 to " + std::to_string(granules) + " (slabs are multiples of " +
                     std::to_string(kSlabGranule) + " of the grid's " + std::to_string(rows) + " y rows), found " + std::to_string(parts));
  std::vector<int> first(static_cast<std::size_t>(parts) + 1);
  for (int p = 0; p < parts; ++p) first[static_cast<std::size_t>(p)] = static_cast<int>(static_cast<long long>(p) * granules / parts) * kSlabGranule;
  first[static_cast<std::size_t>(parts)] = rows;
  return first;
}

int splitParts(const SplitOptions& split, int ranks) {
  return split.parts > 0 ? split.parts : ranks * std::max<int>(1, static_cast<int>(split.devices.size()));
}

std::pair<int, int> slabsOfRank(int parts, int ranks, int rank) {
  return {static_cast<int>(static_cast<long long>(rank) * parts / ranks), static_cast<int>(static_cast<long long>(rank + 1) * parts / ranks)};
}

namespace {

class SplitVectors;

class SplitOperator final : public ConeBeamOperator {
 public:
  SplitOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options, const SplitOptions& split)
      : ConeBeamOperator(backend, geometry, grid, options) {
    if (split.cluster) {
      cluster_ = split.cluster;
    } else {
      own_ = singleProcessCluster();
      cluster_ = own_.get();
    }
    const int ranks = cluster_->size(), rank = cluster_->rank();
    const int parts = splitParts(split, ranks);
    if (parts < ranks)
      throw UsageError(field("slabs") + ": expected at least one slab per rank (" + std::to_string(ranks) + " ranks), found " +
                       std::to_string(parts));
    first_ = splitRows(grid.size[1], parts);
    // Rank r holds parts [r P / R, (r + 1) P / R): consecutive rows, so its rows are one range.
    for (int r = 0; r < ranks; ++r) rankPart_.push_back(slabsOfRank(parts, ranks, r).first);
    rankPart_.push_back(parts);
    for (int p = rankPart_[static_cast<std::size_t>(rank)], i = 0; p < rankPart_[static_cast<std::size_t>(rank) + 1]; ++p, ++i) {
      OperatorOptions partOptions = options;
      partOptions.blockRows = rowsOf(p);
      if (!split.devices.empty()) partOptions.device = split.devices[static_cast<std::size_t>(i) % split.devices.size()];
      partDevice_.push_back(partOptions.device);
      if (std::find(devices_.begin(), devices_.end(), partOptions.device) == devices_.end()) devices_.push_back(partOptions.device);
      std::unique_ptr<ConeBeamOperator> part = makeOperator(backend, geometry, grid, partOptions);
      part->moveBlock(first_[static_cast<std::size_t>(p)], rowsOf(p));
      parts_.push_back(std::move(part));
    }
    step_ = parts_.front()->step();
    // GLRECON_SPLIT_SUMS=host sums on the host as before (to measure what the devices' sums gain).
    const char* sums = std::getenv("GLRECON_SPLIT_SUMS");
    sumOnDevices_ = split.sumOnDevices && !(sums && std::string(sums) == "host");
    partScratch_.resize(parts_.size());
    partials_.resize(parts_.size());
  }

  // `call(i)` for each of this process's parts: a thread per GPU, so that the devices work side by side, each device's
  // parts in turn on its thread (the cuda kernels' per-view constants are one per device); cpu parts in turn (each takes
  // every core). The first error is rethrown.
  template <class Call>
  void forEachPart(const Call& call) {
    if (devices_.size() <= 1 || backend() == Backend::Cpu) {
      for (std::size_t i = 0; i < parts_.size(); ++i) call(i);
      return;
    }
    std::vector<std::exception_ptr> errors(devices_.size());
    {
      std::vector<std::jthread> threads;
      for (std::size_t d = 0; d < devices_.size(); ++d)
        threads.emplace_back([&, d] {
          try {
            for (std::size_t i = 0; i < parts_.size(); ++i)
              if (partDevice_[i] == devices_[d]) call(i);
          } catch (...) {
            errors[d] = std::current_exception();
          }
        });
    }
    for (const std::exception_ptr& error : errors)
      if (error) std::rethrow_exception(error);
  }

  std::string description() const override {
    std::string text = parts_.front()->description() + ", " + std::to_string(first_.size() - 1) + " slabs of y rows";
    if (cluster_->size() > 1) text += " over " + std::to_string(cluster_->size()) + " ranks";
    return text;
  }

  void reset() override {
    for (auto& part : parts_) part->reset();
    timings_ = {};
  }
  void moveBlock(int, int) override {
    throw UsageError("moveBlock: a split operator holds every row of the grid (its slabs are its parts')");
  }
  void setVolume(const float* voxels) override {
    forEachPart([&](std::size_t i) { parts_[i]->setVolume(rowsOfPart(i, voxels).data()); });
  }
  void readVolume(float* destination) override {
    forEachPart([&](std::size_t i) {
      parts_[i]->readVolume(partScratch(i).data());
      movePartRows(i, partScratch_[i].data(), destination, /*toPart=*/false);
    });
    // Every rank's rows to every rank, one rank's range at a time.
    for (int r = 0; r < cluster_->size() && cluster_->size() > 1; ++r) {
      const int first = first_[static_cast<std::size_t>(rankPart_[static_cast<std::size_t>(r)])];
      const int rows = first_[static_cast<std::size_t>(rankPart_[static_cast<std::size_t>(r) + 1])] - first;
      scratch_.resize(static_cast<std::size_t>(grid_.size[0]) * rows * grid_.size[2]);
      if (r == cluster_->rank()) moveSlabRows(grid_.size, first, rows, destination, scratch_.data(), /*toBlock=*/true);
      cluster_->broadcast(r, scratch_.data(), scratch_.size());
      if (r != cluster_->rank()) moveSlabRows(grid_.size, first, rows, scratch_.data(), destination, /*toBlock=*/false);
    }
  }

  void back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) override {
    forEachPart([&](std::size_t i) { parts_[i]->back(projections, views, count, weighting); });
  }
  void forward(const std::size_t* views, std::size_t count, float* projections) override {
    const std::size_t values = count * static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
    std::vector<const float*> terms(parts_.size());
    forEachPart([&](std::size_t i) {
      partials_[i].resize(values);
      parts_[i]->forward(views, count, partials_[i].data());
      terms[i] = partials_[i].data();
    });
    cluster_->sumInOrder(terms, values, projections);
  }

  void setUpdateMask(const std::uint8_t* mask) override {
    giveMaskRows(mask, masks_, [&](std::size_t i, const std::uint8_t* rows) { parts_[i]->setUpdateMask(rows); });
  }
  // Each part's rows of a whole-grid mask (nullptr: none) kept in `masks` (the parts may keep pointers to them) and
  // handed to `give(part, rows)`.
  template <class Give>
  void giveMaskRows(const std::uint8_t* mask, std::vector<std::vector<std::uint8_t>>& masks, const Give& give) {
    masks.assign(parts_.size(), {});
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      if (!mask) {
        give(i, nullptr);
        continue;
      }
      masks[i].resize(voxelsOf(part(i)));
      movePartRows(i, mask, masks[i].data(), /*toPart=*/true);
      give(i, masks[i].data());
    }
  }

  // The subset methods' data on the devices: only where this process holds every part (no ranks) and every part
  // keeps it (cuda, with the room); otherwise none keeps it (the host forms the corrections).
  bool setSubsetData(const float* projections, const float* rayLengths, float rayFloor, bool multiplicative) override {
    subsetsOnDevices_ = false;
    if (!projections || cluster_->size() > 1 || !sumOnDevices_) {
      for (auto& p : parts_) p->setSubsetData(nullptr, nullptr, 0.0f, false);
      return false;
    }
    std::vector<char> kept(parts_.size(), 0);
    try {
      forEachPart([&](std::size_t i) { kept[i] = parts_[i]->setSubsetData(projections, rayLengths, rayFloor, multiplicative); });
    } catch (const CudaError&) {
      // A device's memory taken after its check (cudaMalloc failed): the corrections on the host, as where it lacks room.
      std::fill(kept.begin(), kept.end(), 0);
    }
    subsetsOnDevices_ = std::all_of(kept.begin(), kept.end(), [](char k) { return k != 0; });
    if (!subsetsOnDevices_)
      for (auto& p : parts_) p->setSubsetData(nullptr, nullptr, 0.0f, false);
    return subsetsOnDevices_;
  }
  // A_S x of every part kept on its device, summed ((p0 + p1) + p2) ... on part 0's device (the host's order,
  // Cluster::sumInOrder), the sum copied to the other parts, each part's corrections formed from it.
  double correctSubset(const std::size_t* views, std::size_t count) override {
    if (!subsetsOnDevices_) return ConeBeamOperator::correctSubset(views, count);
    forEachPart([&](std::size_t i) {
      if (!parts_[i]->projectSubset(views, count)) throw std::logic_error("correctSubset: a part kept no projection");
    });
    for (std::size_t i = 1; i < parts_.size(); ++i) parts_.front()->takeSubsetProjection(*parts_[i], /*add=*/true);
    for (std::size_t i = 1; i < parts_.size(); ++i) parts_[i]->takeSubsetProjection(*parts_.front(), /*add=*/false);
    std::vector<double> squares(parts_.size());
    forEachPart([&](std::size_t i) { squares[i] = parts_[i]->correctProjectedSubset(views, count); });
    return squares.front();  // every part's: the same corrections of the same sum
  }

  void updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                    const float* cachedWeights) override {
    if (!correction && !subsetsOnDevices_) throw std::logic_error("updateSubset: no corrections on the devices (setSubsetData returned false)");
    // The floor below which a voxel is left alone comes from the whole volume's largest B_S(1), as one block's: found
    // once per subset (from the caller's weights, or from each part's computed for it) and kept.
    SubsetRule whole = rule;
    if (whole.largestWeight <= 0.0f) whole.largestWeight = largestWeight(views, count, cachedWeights);
    forEachPart([&](std::size_t i) {
      // A part that computes B_S(1) next to its volume (cuda, which keeps them per subset) takes none; the others get
      // their rows of the caller's weights, or compute them themselves.
      const float* weights = nullptr;
      if (cachedWeights && !parts_[i]->computesSubsetWeights()) weights = rowsOfPart(i, cachedWeights).data();
      parts_[i]->updateSubset(correction, views, count, whole, weights);  // nullptr: the part's own corrections
    });
  }

  std::unique_ptr<OperatorVectors> makeVectors(int volumes, int scans) override;

  // Where every part computes its rows' B_S(1) (cuda), the caller keeps no weights: each part's would go unread.
  bool computesSubsetWeights() const override {
    return std::all_of(parts_.begin(), parts_.end(), [](const auto& part) { return part->computesSubsetWeights(); });
  }

  void setRegion(const RegionOfInterest&) override {
    throw UsageError("setRegion: a split operator runs the iterative methods (their region is IterativeOptions::mask)");
  }
  std::vector<std::uint8_t> activeMask() override { return {}; }
  double culledFraction() const override { return 0.0; }
  bool softwareDevice() const override { return parts_.front()->softwareDevice(); }
  void synchronize() override {
    forEachPart([&](std::size_t i) { parts_[i]->synchronize(); });
  }
  OperatorTimings timings() const override {
    OperatorTimings sum = timings_;
    for (const auto& part : parts_) {
      const OperatorTimings t = part->timings();
      sum.upload += t.upload;
      sum.compute += t.compute;
      sum.readback += t.readback;
      sum.forward += t.forward;
      sum.back += t.back;
      sum.samples += t.samples;
    }
    return sum;
  }

 private:
  int part(std::size_t local) const { return rankPart_[static_cast<std::size_t>(cluster_->rank())] + static_cast<int>(local); }
  // Part i's rows of each of `components` whole-grid arrays laid one after another (fields: 3) into its own layout
  // (toPart), or back into the whole grid's.
  template <class T>
  void movePartRows(std::size_t i, const T* from, T* to, bool toPart, std::size_t components = 1) const {
    const int p = part(i);
    const std::size_t whole = grid_.voxelCount(), own = voxelsOf(p);
    for (std::size_t c = 0; c < components; ++c)
      moveSlabRows(grid_.size, first_[static_cast<std::size_t>(p)], rowsOf(p), from + c * (toPart ? whole : own), to + c * (toPart ? own : whole),
                   toPart);
  }
  // Part i's scratch, sized for `components` arrays of its rows.
  std::vector<float>& partScratch(std::size_t i, std::size_t components = 1) {
    partScratch_[i].resize(components * voxelsOf(part(i)));
    return partScratch_[i];
  }
  // Part i's rows of `whole` (movePartRows) in its scratch.
  std::vector<float>& rowsOfPart(std::size_t i, const float* whole, std::size_t components = 1) {
    std::vector<float>& rows = partScratch(i, components);
    movePartRows(i, whole, rows.data(), /*toPart=*/true, components);
    return rows;
  }
  int rowsOf(int p) const { return first_[static_cast<std::size_t>(p) + 1] - first_[static_cast<std::size_t>(p)]; }
  std::size_t voxelsOf(int p) const { return static_cast<std::size_t>(grid_.size[0]) * rowsOf(p) * grid_.size[2]; }

  // The largest B_S(1) over every part of the subset `views` (a collective: every rank calls it for the same subset).
  float largestWeight(const std::size_t* views, std::size_t count, const float* cachedWeights) {
    std::vector<std::size_t> key(views, views + count);
    if (const auto found = largest_.find(key); found != largest_.end()) return found->second;
    double largest = 0.0;
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      const int p = part(i);
      if (cachedWeights) {
        // The part's rows of the caller's weights, read where they lie (a run of nx x rows per z slice).
        const std::size_t nx = static_cast<std::size_t>(grid_.size[0]), ny = static_cast<std::size_t>(grid_.size[1]);
        const std::size_t run = nx * static_cast<std::size_t>(rowsOf(p));
        for (std::size_t k = 0; k < static_cast<std::size_t>(grid_.size[2]); ++k) {
          const float* at = cachedWeights + (k * ny + static_cast<std::size_t>(first_[static_cast<std::size_t>(p)])) * nx;
          if (run > 0) largest = std::max(largest, static_cast<double>(*std::max_element(at, at + run)));
        }
      } else {
        largest = std::max(largest, static_cast<double>(parts_[i]->subsetLargestWeight(views, count)));
      }
    }
    const float all = static_cast<float>(cluster_->maximum(largest));
    largest_.emplace(std::move(key), all);
    return all;
  }

  std::unique_ptr<Cluster> own_;
  Cluster* cluster_ = nullptr;
  bool sumOnDevices_ = true;       // SplitOptions::sumOnDevices
  bool subsetsOnDevices_ = false;  // every part keeps the subset methods' data (setSubsetData)
  std::vector<int> first_;     // the slabs' first rows, and the grid's rows last
  std::vector<int> rankPart_;  // rank r's parts: [rankPart_[r], rankPart_[r + 1])
  std::vector<std::unique_ptr<ConeBeamOperator>> parts_;
  std::vector<int> partDevice_, devices_;  // each part's device; the devices this process's parts are on
  std::vector<std::vector<float>> partials_;
  std::vector<std::vector<std::uint8_t>> masks_;
  std::vector<float> scratch_;                   // readVolume's rank-to-rank rows
  std::vector<std::vector<float>> partScratch_;  // each part's rows on their way to or from it
  std::map<std::vector<std::size_t>, float> largest_;  // per subset: the largest B_S(1) over every part
  friend class SplitVectors;
};

// OperatorVectors over the parts' own (cuda, one process): a volume (or field) vector is every part's rows in its
// part's vectors, a projection vector a copy of every view's projections in each part's, kept equal. forward sums the
// parts' projections on the devices in part order ((p0 + p1) + p2 on part 0's, as the host sums them) and copies the
// sum to the others; back, the element-wise operations and the stencils (which read the rows across a part's edges
// from its neighbours' vectors, OperatorVectors::setNeighbours) run on each part's: the whole grid's bits; a volume's
// sums add the parts' in part order (they differ from one block's in the order of the additions only, as operator.h
// allows).
class SplitVectors final : public OperatorVectors {
 public:
  SplitVectors(SplitOperator& op, std::vector<std::unique_ptr<OperatorVectors>> parts) : op_(op), parts_(std::move(parts)) {
    for (std::size_t i = 0; i < parts_.size(); ++i)
      parts_[i]->setNeighbours(i > 0 ? parts_[i - 1].get() : nullptr, i + 1 < parts_.size() ? parts_[i + 1].get() : nullptr);
  }

  Id volume() override { return make(Kind::Volume); }
  Id projections() override { return make(Kind::Projections); }
  Id field() override { return make(Kind::Field); }
  // A volume or field: each part's rows of each component; projections: every part's copy.
  void upload(Id to, const float* values) override {
    op_.forEachPart([&](std::size_t i) {
      parts_[i]->upload(to, kind(to) == Kind::Projections ? values : op_.rowsOfPart(i, values, components(to)).data());
    });
  }
  void download(Id from, float* values) override {
    if (kind(from) == Kind::Projections) return parts_.front()->download(from, values);
    op_.forEachPart([&](std::size_t i) {
      std::vector<float>& rows = op_.partScratch(i, components(from));
      parts_[i]->download(from, rows.data());
      op_.movePartRows(i, rows.data(), values, /*toPart=*/false, components(from));
    });
  }
  void setMask(const std::uint8_t* mask) override {
    op_.giveMaskRows(mask, masks_, [&](std::size_t i, const std::uint8_t* rows) { parts_[i]->setMask(rows); });
  }
  void forward(Id volume, Id projections) override {
    op_.forEachPart([&](std::size_t i) { parts_[i]->forward(volume, projections); });
    for (std::size_t i = 1; i < parts_.size(); ++i) parts_.front()->takeFrom(projections, *parts_[i], projections, /*add=*/true);
    for (std::size_t i = 1; i < parts_.size(); ++i) parts_[i]->takeFrom(projections, *parts_.front(), projections, /*add=*/false);
  }
  void back(Id projections, Id volume) override {
    op_.forEachPart([&](std::size_t i) { parts_[i]->back(projections, volume); });
  }
  void axpy(double a, Id x, Id y) override { each([&](OperatorVectors& v) { v.axpy(a, x, y); }); }
  void xpay(Id x, double b, Id y) override { each([&](OperatorVectors& v) { v.xpay(x, b, y); }); }
  void copy(Id from, Id to) override { each([&](OperatorVectors& v) { v.copy(from, to); }); }
  double dot(Id a, Id b) override { return sum(a, [&](OperatorVectors& v) { return v.dot(a, b); }); }
  double distanceSquared(Id a, Id b) override { return sum(a, [&](OperatorVectors& v) { return v.distanceSquared(a, b); }); }
  double largestMagnitude(Id x) override {
    if (kind(x) == Kind::Projections) return parts_.front()->largestMagnitude(x);
    double largest = 0.0;
    for (auto& v : parts_) largest = std::max(largest, v->largestMagnitude(x));
    return largest;
  }
  void clampNegative(Id x) override { each([&](OperatorVectors& v) { v.clampNegative(x); }); }
  void extrapolate(Id x, Id previous, Id out) override { each([&](OperatorVectors& v) { v.extrapolate(x, previous, out); }); }
  void dataDualStep(Id y, Id ax, Id axPrevious, Id b, Id sigma) override {
    each([&](OperatorVectors& v) { v.dataDualStep(y, ax, axPrevious, b, sigma); });
  }
  void projectedStep(Id x, Id tau, Id g, Id out) override { each([&](OperatorVectors& v) { v.projectedStep(x, tau, g, out); }); }
  void fromOperatorVolume(Id to) override { each([&](OperatorVectors& v) { v.fromOperatorVolume(to); }); }
  void toOperatorVolume(Id from) override { each([&](OperatorVectors& v) { v.toOperatorVolume(from); }); }
  // The stencils: each part's in turn, each reading its neighbours' edge rows once their devices are done.
  void forwardDifferences(Id volume, float scale, Id field) override {
    each([&](OperatorVectors& v) { v.forwardDifferences(volume, scale, field); });
  }
  void addTransposedDifferences(Id field, float scale, Id volume) override {
    each([&](OperatorVectors& v) { v.addTransposedDifferences(field, scale, volume); });
  }
  void clipToBall(Id z, Id d, float bound) override { each([&](OperatorVectors& v) { v.clipToBall(z, d, bound); }); }
  void totalVariationGradient(Id x, float eps, Id field, Id gradient) override {
    each([&](OperatorVectors& v) { v.totalVariationGradient(x, eps, field, gradient); });
  }

 private:
  enum class Kind { Volume, Field, Projections };
  Id make(Kind made) {
    Id id = -1;
    for (auto& v : parts_) {
      const Id next = made == Kind::Volume ? v->volume() : made == Kind::Field ? v->field() : v->projections();
      if (id >= 0 && next != id) throw std::logic_error("SplitVectors: the parts numbered a vector differently");
      id = next;
    }
    kinds_.resize(static_cast<std::size_t>(id) + 1);
    kinds_[static_cast<std::size_t>(id)] = made;
    return id;
  }
  Kind kind(Id id) const { return kinds_.at(static_cast<std::size_t>(id)); }
  std::size_t components(Id id) const { return kind(id) == Kind::Field ? 3 : 1; }
  // Element-wise: each part's in turn (their kernels queue on their own devices).
  template <class Call>
  void each(const Call& call) {
    for (auto& v : parts_) call(*v);
  }
  // A volume's (or field's) sum: the parts' in part order; a projection vector's: part 0's copy.
  template <class Call>
  double sum(Id a, const Call& call) {
    if (kind(a) == Kind::Projections) return call(*parts_.front());
    double total = 0.0;
    for (auto& v : parts_) total += call(*v);
    return total;
  }

  SplitOperator& op_;
  std::vector<std::unique_ptr<OperatorVectors>> parts_;
  std::vector<Kind> kinds_;  // per id
  std::vector<std::vector<std::uint8_t>> masks_;
};

// The parts' vectors where every part keeps them (cuda, with the room) in a one-process split summing on its devices;
// otherwise none (the caller's host vectors).
std::unique_ptr<OperatorVectors> SplitOperator::makeVectors(int volumes, int scans) {
  if (cluster_->size() > 1 || !sumOnDevices_) return nullptr;
  std::vector<std::unique_ptr<OperatorVectors>> vectors;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    // A part's vectors are made as they are asked for, after every part's check: where k parts share a device, each
    // checks the room for k times its own (the parts' rows differ by under a granule; each holds a copy of the scans).
    const int sharing = static_cast<int>(std::count(partDevice_.begin(), partDevice_.end(), partDevice_[i]));
    vectors.push_back(parts_[i]->makeVectors(volumes * sharing, scans * sharing));
    if (!vectors.back()) return nullptr;
  }
  return std::make_unique<SplitVectors>(*this, std::move(vectors));
}

}  // namespace

std::unique_ptr<ConeBeamOperator> makeSplitOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid,
                                                    const OperatorOptions& options, const SplitOptions& split) {
  if (backend != Backend::Cpu && backend != Backend::Cuda)
    throw UsageError(field("backend") + ": the iterative methods over slabs (--slabs, mpirun) run on cpu or cuda (the " +
                     backendInfo(backend).name + " backend's iterative passes hold the whole grid), found " + backendInfo(backend).name);
  // Each cuda part is an operator holding one of the process's constant-memory matrix banks (fdk_kernels.cu, kBanks):
  // more parts in one process are refused here, by the option that asks for them, before any CUDA call (the ninth
  // would otherwise fail as it is made, its error naming no option).
  if (backend == Backend::Cuda) {
    constexpr int kCudaPartsPerProcess = 8;
    const int ranks = split.cluster ? split.cluster->size() : 1, rank = split.cluster ? split.cluster->rank() : 0;
    const auto [first, last] = slabsOfRank(splitParts(split, ranks), ranks, rank);
    if (last - first > kCudaPartsPerProcess)
      throw UsageError(field("slabs") + ": expected at most " + std::to_string(kCudaPartsPerProcess) +
                       " slabs per process on cuda (each holds one of a process's " + std::to_string(kCudaPartsPerProcess) +
                       " constant-memory matrix banks), found " + std::to_string(last - first) +
                       (ranks > 1 ? " on rank " + std::to_string(rank) + " of " + std::to_string(ranks) : std::string()));
  }
  return std::make_unique<SplitOperator>(backend, geometry, grid, options, split);
}

std::unique_ptr<ConeBeamOperator> makeOperatorOrSplit(Backend backend, const Geometry& geometry, const VolumeGrid& grid,
                                                      const OperatorOptions& options, const SplitOptions& split) {
  if ((split.cluster && split.cluster->size() > 1) || split.parts > 1 || split.devices.size() > 1)
    return makeSplitOperator(backend, geometry, grid, options, split);
  OperatorOptions whole = options;
  if (!split.devices.empty()) whole.device = split.devices.front();
  return makeOperator(backend, geometry, grid, whole);
}

}  // namespace glrecon
