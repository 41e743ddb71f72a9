#pragma once
/// Iterative reconstruction over ConeBeamOperator (never GL or CUDA directly, so the same code runs on every backend):
///   SART / OS-SART  x += lambda * (B_S 1)^-1 B_S [ (b_S - A_S x) / (A_S 1) ]          (Andersen & Kak; TIGRE's OS-SART)
///   SIRT            the same with one subset holding every view
///   CGLS            conjugate gradients on the normal equations B A x = B b (needs B ~ A^T; lambda, positivity unused;
///                   steps by exact line search, so the residual never rises with an unmatched pair; restarted from
///                   B r where a direction stops descending, stopped where B r does not descend either)
///   OS-EM / MLEM    x *= (B_S 1)^-1 B_S [ b_S / (A_S x) ]                              (Hudson & Larkin 1994)
///                   (negative line integrals, noise where a ray crosses little object, are taken as 0, with a warning)
///   ASD-POCS        per iteration one SART sweep with x >= 0 (data consistency), then `tvSteps` steps of steepest
///                   descent on the total variation, their length adapted to the sweep's change (Sidky & Pan 2008;
///                   TIGRE's few-view workhorse)
///   PDHG-TV         min 1/2 |A x - b|^2 + lambda TV(x) over x >= 0 by Chambolle & Pock's primal-dual algorithm
///                   (2011; for CT: Sidky, Jorgensen & Pan 2012) with diagonal preconditioning (Pock & Chambolle
///                   2011): per iteration one forward and one back projection, no inner TV solver, no step to tune;
///                   convergent for a matched pair (--projector matched). lambda = tvWeight s |A|^2 (|A|^2 bounded by
///                   max B 1 max A 1, s = max b / max A 1 the data's density scale), so tvWeight is unitless
/// Ordered subsets (SubsetOrder::Interleaved, the default): subset s holds the views v with v mod S == s (each subset
/// spans the whole arc); the subsets are visited in bit-reversed order of s (0, S/2, S/4, 3S/4, ... for a power of
/// two), so consecutive subsets are far apart in angle. TIGRE's other two orders are there too (SubsetOrder::Ordered,
/// SubsetOrder::Random: blocks of consecutive views, in view order or shuffled by a seed). Rays with A 1 = 0 (missing the volume) and voxels with B 1 = 0 (seen by no view of the subset)
/// are left out of the update. Tested in tests/recon/iterative*_test.cpp.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/operator.h"

namespace glrecon {

enum class IterativeMethod { Sart, Sirt, Cgls, Osem, AsdPocs, PdhgTv };
IterativeMethod parseIterativeMethod(const std::string& name);
const char* methodName(IterativeMethod method);

/// How the views form the subsets and the order the subsets are visited in (TIGRE's OrderStrategy), the same order
/// in every iteration:
///   Interleaved  subset s holds the views v with v mod S == s, visited in bit-reversed order of s (the default;
///                TIGRE's "angularDistance" in aim: consecutive subsets far apart in angle)
///   Ordered      S blocks of consecutive views (view order, as the geometry lists them), visited in that order; the
///                first (views mod S) blocks are one view longer (TIGRE's "ordered"; TIGRE's blocks are `blocksize`
///                long with the remainder last)
///   Random       the Ordered blocks, visited in an order shuffled once per run from IterativeOptions::orderSeed
///                (TIGRE's "random", which is unseeded): the same seed gives the same order, on every platform
enum class SubsetOrder { Interleaved, Ordered, Random };
/// "interleaved", "ordered" or "random" (UsageError naming the field `order` otherwise).
SubsetOrder parseSubsetOrder(const std::string& name);
const char* subsetOrderName(SubsetOrder order);

struct IterativeOptions {
  IterativeMethod method = IterativeMethod::Sart;
  int iterations = 10;
  int subsets = 0;         ///< 0: the method's default (sart: one view per subset; osem: 8; sirt, cgls: 1)
  double lambda = 0.0;     ///< relaxation; 0: the default (sart 0.8 with subsets of one view, else 1; sirt 1)
  /// Clamp negative voxels to 0 after every update (sart, sirt). Unset: on for sart and sirt, as TIGRE's SART family
  /// (attenuation is never negative, and on few views the clamp is what brings SIRT and OS-SART below FDK:
  /// docs/iterative.md); osem's rule keeps voxels positive anyway; cgls cannot (UsageError when set true).
  std::optional<bool> positivity;
  SubsetOrder order = SubsetOrder::Interleaved;  ///< the subsets' views and visiting order (sart, osem, asd-pocs)
  std::uint64_t orderSeed = 0;  ///< SubsetOrder::Random's seed (any value; the default 0 is a seed too); unused otherwise
  /// Stopping rules, checked on each iteration's residual (IterationRecord::residual) at its end; 0: off.
  double stopResidual = 0.0;  ///< stop once the residual is at most this fraction of ||b||
  double stopChange = 0.0;    ///< stop once an iteration lowers the residual by less than this fraction of it
  /// ASD-POCS (Sidky & Pan 2008, with TIGRE's defaults): TV descent steps per iteration; the first iteration's TV step
  /// length as a fraction of the SART sweep's change |dx|; its reduction factor whenever the TV steps moved the
  /// volume more than tvRatio |dx| (TV would otherwise outweigh the data); the relaxation's reduction per iteration.
  int tvSteps = 20;
  double tvAlpha = 0.002, tvReduction = 0.95, tvRatio = 0.95, lambdaReduction = 0.99;
  /// PDHG-TV: the TV term's weight relative to the data's curvature |A|^2 at the data's density scale.
  double tvWeight = 0.001;
  std::vector<std::uint8_t> mask;  ///< region of interest (1 inside), x fastest; empty: the whole volume
  const Image* initial = nullptr;  ///< starting volume on the same grid; nullptr: 0 (osem: a positive constant)
  /// Call back after every subset too (a live view of SART's progress), not only at the end of each iteration: on
  /// GPU backends that keep the iterate on the device this brings the volume to the host after every subset.
  bool everySubset = false;
};

/// One line of the residual curve: after iteration `iteration` (1-based) or, for callbacks during an iteration,
/// after subset `subset` of it. `residual` is ||b - A x||_2 over all views, each view's residual measured by the
/// forward projection its subset's update computed (for one subset: exactly ||b - A x_{k-1}||, the iterate before
/// the iteration); `finalResidual` of the report is measured on the final volume with one more forward projection.
struct IterationRecord {
  int iteration = 0;
  int subset = 0;  ///< subsets done in this iteration
  int subsets = 0;
  double residual = 0.0;
  double seconds = 0.0;  ///< time of this iteration
};

struct IterativeReport {
  std::vector<IterationRecord> iterations;
  double dataNorm = 0.0;       ///< ||b||_2
  double finalResidual = 0.0;  ///< ||b - A x_final||_2
  double seconds = 0.0;        ///< every iteration, normalisation included
  double setupSeconds = 0.0;   ///< A 1 and B_S 1
  int subsets = 0;
  double lambda = 0.0;
  int restarts = 0;        ///< CGLS: restarts from B r where the conjugate direction stopped descending
  std::string stopReason;  ///< why the run ended before its iterations (a stopping rule; CGLS: B r no longer descends)
  std::string warning;     ///< what the result needs said (field references marked): the residual rose over three iterations
                           ///< running; osem took negative line integrals as 0. "; " between several
};

class IterativeReconstructor;
/// Called at the end of every iteration (`record.subset == record.subsets`) and, with IterativeOptions::everySubset,
/// after every subset too, with the iteration's figures and the reconstructor: `reconstructor.volume()` fetches the
/// volume so far where the callback wants it. Nothing is read back otherwise (a callback that only prints the residual
/// cost a 64 MiB device-to-host copy per iteration at 256^3 when it was handed the volume).
using IterationCallback = std::function<void(const IterationRecord& record, IterativeReconstructor& reconstructor)>;

/// An iterative reconstruction, step by step (a viewer draws between steps; reconstructIterative runs it through).
/// The constructor checks everything before work starts (InputError / UsageError naming the field, expected and
/// found): iterations >= 1, 1 <= subsets <= views, lambda in (0, 2), osem data finite with some positive value,
/// the initial volume on `grid`, the mask's size; then computes the normalisations (A 1, B_S 1).
class IterativeReconstructor {
 public:
  /// `op`, `geometry` and `projections` must outlive the reconstructor.
  IterativeReconstructor(ConeBeamOperator& op, const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                         const IterativeOptions& options);
  ~IterativeReconstructor();
  IterativeReconstructor(const IterativeReconstructor&) = delete;
  IterativeReconstructor& operator=(const IterativeReconstructor&) = delete;

  /// One subset's update (SART, OS-EM; SIRT's one subset), or one CGLS iteration. False once the last iteration is done.
  bool step();
  /// The record of the last step (iteration, subsets done of how many, residual so far).
  const IterationRecord& last() const;
  int subsets() const;
  ConeBeamOperator& op();
  /// True where the iterate lives in the operator's volume (the subset methods): a viewer on the operator's device may
  /// draw it from there; otherwise volume() has it.
  bool iterateOnOperator() const;
  /// The iterate on the host (read from the operator where it lives there).
  const Voxels& volume();
  /// The result, with the final residual (one more forward projection) in the report.
  Image finish(IterativeReport* report = nullptr);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// IterativeReconstructor run through: the checks, every step, the callback at each iteration's end (and after every
/// subset with IterativeOptions::everySubset), finish().
Image reconstructIterative(ConeBeamOperator& op, const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                           const IterativeOptions& options, IterativeReport* report = nullptr,
                           const IterationCallback& callback = {});

/// The views of subset s of `views` split into `subsets` (v mod S == s), and the visiting order of the subsets.
std::vector<std::vector<std::size_t>> orderedSubsets(std::size_t views, int subsets);
/// The subsets in the order they are visited, for each SubsetOrder (Interleaved: orderedSubsets); every view in exactly
/// one of them, none empty. UsageError for subsets outside 1 to views or an order that is none of the three.
std::vector<std::vector<std::size_t>> subsetsInOrder(std::size_t views, int subsets, SubsetOrder order, std::uint64_t seed = 0);

}  // namespace glrecon
