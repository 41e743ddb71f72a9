// SART / OS-SART, SIRT, CGLS, OS-EM, ASD-POCS and PDHG-TV over ConeBeamOperator. The subset methods (SART, OS-SART,
// OS-EM, ASD-POCS, and SIRT as their one-subset case) keep the iterate where the operator computes (its volume): on the
// device for the GPU backends (cuda, graphics, compute), so a subset moves only its projections and corrections; on the
// host for cpu. CGLS, PDHG-TV and ASD-POCS's TV phase work on OperatorVectors: on the device where the operator keeps
// vectors there (cuda), else on the host (host_vectors.h) in the same float operations.
#include "glrecon/iterative.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>

#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/validate.h"
#include "recon/iterative/host_vectors.h"

namespace glrecon {
namespace {

using detail::blockedSum;
using detail::forEachIndex;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Below this fraction of the largest value, a ray length A 1 or a voxel weight B 1 counts as zero: rays that
// only graze a corner of the volume box (or voxels that only graze the detector edge) would otherwise divide
// their residual by a length of rounding size.
constexpr double kRelativeFloor = 1e-6;

int bitReverse(int value, int bits) {
  int r = 0;
  for (int b = 0; b < bits; ++b) r |= ((value >> b) & 1) << (bits - 1 - b);
  return r;
}

double sumSquares(const Voxels& v) {
  return blockedSum(v.size(), [&](std::size_t i) { return static_cast<double>(v[i]) * v[i]; });
}

// A copy of `projections` with negative line integrals taken as 0, or an empty image where none is negative. NaN and
// infinities stay (the data's check refuses them by name).
Image withoutNegatives(const Image& projections) {
  if (std::none_of(projections.data.begin(), projections.data.end(), [](float v) { return v < 0.0f; })) return {};
  checkHostMemory("osem", "a copy of the projections with their negative line integrals taken as 0",
                  std::uint64_t{4} * projections.data.size());
  Image copy = projections;
  for (float& v : copy.data) v = v < 0.0f ? 0.0f : v;
  return copy;
}

// The methods that update the operator's volume subset by subset (SART, SIRT, OS-EM, ASD-POCS); CGLS and PDHG-TV work
// on OperatorVectors over every view.
bool updatesBySubsets(IterativeMethod method) { return method != IterativeMethod::Cgls && method != IterativeMethod::PdhgTv; }

}  // namespace

IterativeMethod parseIterativeMethod(const std::string& name) {
  if (name == "sart" || name == "os-sart") return IterativeMethod::Sart;
  if (name == "sirt") return IterativeMethod::Sirt;
  if (name == "cgls") return IterativeMethod::Cgls;
  if (name == "osem" || name == "os-em" || name == "mlem") return IterativeMethod::Osem;
  if (name == "asd-pocs" || name == "asdpocs") return IterativeMethod::AsdPocs;
  if (name == "pdhg-tv" || name == "pdhg" || name == "chambolle-pock") return IterativeMethod::PdhgTv;
  throw UsageError(field("method") + ": expected sart, sirt, cgls, osem, asd-pocs or pdhg-tv, found '" + name + "'");
}

const char* methodName(IterativeMethod method) {
  switch (method) {
    case IterativeMethod::Sart: return "sart";
    case IterativeMethod::Sirt: return "sirt";
    case IterativeMethod::Cgls: return "cgls";
    case IterativeMethod::Osem: return "osem";
    case IterativeMethod::AsdPocs: return "asd-pocs";
    case IterativeMethod::PdhgTv: return "pdhg-tv";
  }
  return "?";
}

std::vector<std::vector<std::size_t>> orderedSubsets(std::size_t views, int subsets) {
  int bits = 0;
  while ((1 << bits) < subsets) ++bits;
  std::vector<std::vector<std::size_t>> out;
  for (int r = 0; r < (1 << bits); ++r) {
    const int s = bitReverse(r, bits);
    if (s >= subsets) continue;  // bit reversal over the next power of two; indices past S are skipped
    std::vector<std::size_t> subset;
    for (std::size_t v = static_cast<std::size_t>(s); v < views; v += static_cast<std::size_t>(subsets)) subset.push_back(v);
    out.push_back(std::move(subset));
  }
  return out;
}

SubsetOrder parseSubsetOrder(const std::string& name) {
  if (name == "interleaved") return SubsetOrder::Interleaved;
  if (name == "ordered") return SubsetOrder::Ordered;
  if (name == "random") return SubsetOrder::Random;
  throw UsageError(field("order") + ": expected interleaved, ordered or random, found '" + quoted(name) + "'");
}

const char* subsetOrderName(SubsetOrder order) {
  switch (order) {
    case SubsetOrder::Interleaved: return "interleaved";
    case SubsetOrder::Ordered: return "ordered";
    case SubsetOrder::Random: return "random";
  }
  return "?";
}

std::vector<std::vector<std::size_t>> subsetsInOrder(std::size_t views, int subsets, SubsetOrder order, std::uint64_t seed) {
  if (order == SubsetOrder::Interleaved) return orderedSubsets(views, subsets);
  if (order != SubsetOrder::Ordered && order != SubsetOrder::Random)
    throw UsageError(field("order") + ": expected interleaved, ordered or random, found " + std::to_string(static_cast<int>(order)));
  if (subsets < 1 || static_cast<std::size_t>(subsets) > views)
    throw UsageError(field("subsets") + ": expected 1 to " + std::to_string(views) + " (the number of projections), found " + std::to_string(subsets));
  // S blocks of consecutive views in view order, the first views mod S of them one view longer (TIGRE's blocks are
  // blocksize long with the remainder last; here the count S is given and every block is non-empty).
  const std::size_t count = static_cast<std::size_t>(subsets), base = views / count, longer = views % count;
  std::vector<std::vector<std::size_t>> out(count);
  for (std::size_t s = 0, first = 0; s < count; ++s) {
    const std::size_t length = base + (s < longer ? 1 : 0);
    for (std::size_t v = first; v < first + length; ++v) out[s].push_back(v);
    first += length;
  }
  if (order == SubsetOrder::Random) {
    // Fisher-Yates over the blocks with mt19937_64 (its sequence is fixed by the standard) and an unbiased draw by
    // rejection written here (std::shuffle and the distributions differ between standard libraries): the same seed
    // gives the same order everywhere.
    std::mt19937_64 random(seed);
    for (std::size_t i = count - 1; i > 0; --i) {
      const std::uint64_t n = i + 1, limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
      std::uint64_t r = random();
      while (r >= limit) r = random();
      std::swap(out[i], out[static_cast<std::size_t>(r % n)]);
    }
  }
  return out;
}

struct IterativeReconstructor::State {
  ConeBeamOperator& op;
  const Geometry& geometry;
  const Image& given;
  // OS-EM: the data with noise's negative line integrals taken as 0 where there are any (a log of Poisson counts is
  // negative in air: 20% of the pixels of a 90-view scan at I0 = 1e4, which OS-EM refused outright); else empty.
  Image nonNegative;
  const Image& projections;  // what the method reads: `given`, or `nonNegative`
  VolumeGrid grid;
  IterativeOptions options;
  IterativeMethod method;
  std::size_t views, pixels, voxels;
  int subsets;
  double lambda;
  Clock::time_point start;
  IterativeReport report;
  std::vector<std::vector<std::size_t>> order;
  std::vector<std::size_t> all;
  std::vector<float> rayLength, zeros;
  Voxels x;  // the iterate: an Image's voxels, moved into the result by finish()
  float rayFloor = 0;
  bool cacheWeights = false;
  std::vector<std::vector<float>> cachedWeights;
  SubsetRule rule;
  // Where the run is: iteration `iteration` (1-based), subsets done in it, the squares of its residuals so far.
  int iteration = 1;
  std::size_t subsetsDone = 0;
  double squares = 0;
  Clock::time_point iterationStart;
  IterationRecord last;
  bool finished = false;
  bool hostCurrent = true;  // x holds the iterate (the subset methods once read back; CGLS where it downloaded it)
  bool iterateInVectors = false;  // CGLS, PDHG-TV: the iterate is the vector `vx` of `vectors`
  bool correctionsOnDevice = false;  // the operator forms each subset's correction on its device (setSubsetData)
  // CGLS, PDHG-TV and ASD-POCS's TV phase: their vectors where the operator computes (cuda: on the device) or on the
  // host. CGLS: the iterate vx, r = b - A x, s = B r, p, q = A p; gamma = |s|^2.
  std::unique_ptr<OperatorVectors> vectors;
  OperatorVectors::Id vx = 0, vr = 0, vs = 0, vp = 0, vq = 0;
  double gamma = 0;
  // CGLS: whether p is B r itself (at the start and after a restart); whether the run stopped early.
  bool directionIsGradient = true, stopped = false;
  // Iterations in a row whose residual rose (any method's warning).
  int risingIterations = 0;
  bool risingWarned = false;
  // ASD-POCS's TV phase (vectors; the iterate itself stays in the operator's volume between phases): the iterate vx,
  // the volume the iteration started from, the volume after the data step, the TV gradient and its field (scratch);
  // the TV step length (0 until the first iteration sets it).
  OperatorVectors::Id vPrevious = 0, vAfterData = 0, vTvGradient = 0, vTvField = 0;
  double tvStep = 0.0;
  // PDHG-TV (vectors): the iterate vx and the one before, both forward projections, the dual variables (data: y;
  // gradient: z, three components) and the differences z moves by, the per-ray and per-voxel steps, the data, scratch;
  // the TV bound lambda / nu and nu.
  OperatorVectors::Id vxPrevious = 0, vAxNow = 0, vAxPrevious = 0, vDualData = 0, vDualGradient = 0, vDifferences = 0, vScratch = 0,
                      vRayStep = 0, vVoxelStep = 0, vData = 0;
  double dualBound = 0.0, nu = 1.0;
  // A subset's data, forward projection and correction.
  std::vector<float> ax, b, correction;

  State(ConeBeamOperator& o, const Geometry& g, const Image& pr, const VolumeGrid& gr, const IterativeOptions& opts)
      : op(o),
        geometry(g),
        given(pr),
        nonNegative(opts.method == IterativeMethod::Osem ? withoutNegatives(pr) : Image{}),
        projections(nonNegative.data.empty() ? pr : nonNegative),
        grid(gr),
        options(opts),
        method(opts.method) {}
  bool inside(std::size_t i) const { return options.mask.empty() || options.mask[i]; }
  void backInto(const float* values, const std::vector<std::size_t>& subset, float* out) { detail::backProjectInto(op, zeros, values, subset, out); }
  // The method's vectors where the operator keeps them (for `volumes` volumes and `scans` projection vectors), else on the host.
  void makeVectors(int volumes, int scans) {
    vectors = op.makeVectors(volumes, scans);
    if (vectors) return;
    // On the host after all where check() counted them on the device (cuda short of memory for them, or slabs, which
    // keep none): counted now, before they are made.
    if (op.backend() == Backend::Cuda)
      checkHostMemory(methodName(method), "the iterate and its work vectors, on the host, for " + std::to_string(voxels) + " voxels and " +
                                              std::to_string(views) + " projections",
                      hostBytes(subsets, /*vectorsOnHost=*/true));
    vectors = detail::makeHostVectors(op, zeros, all);
  }
  // The subset's data, one projection after another: the projections themselves where the subset is every view in
  // order (SIRT: no 94 MB copy per iteration at 256^2 x 360), else gathered into `b`.
  const float* gather(const std::vector<std::size_t>& subset) {
    if (subset.size() == views) return projections.data.data();
    b.resize(subset.size() * pixels);
    for (std::size_t i = 0; i < subset.size(); ++i)
      std::copy_n(projections.slice(static_cast<int>(subset[i])), pixels, b.begin() + i * pixels);
    return b.data();
  }
  void check();
  void startCgls();
  std::uint64_t hostBytes(int subsetCount, bool vectorsOnHost) const;
  void setUp();
  void cglsIteration();
  void subsetUpdate();
  void applyStoppingRules();
  void startTotalVariation();
  void totalVariationSteps();
  void startPdhg();
  void pdhgIteration();
};

void IterativeReconstructor::State::check() {
  // ---- preconditions, before any work ----
  checkValue("iterations", options.iterations);
  checkValue("stopResidual", options.stopResidual);
  checkValue("stopChange", options.stopChange);
  if (method == IterativeMethod::AsdPocs) {
    checkValue("tvSteps", options.tvSteps);
    checkValue("tvAlpha", options.tvAlpha);
    checkValue("tvReduction", options.tvReduction);
    checkValue("tvRatio", options.tvRatio);
    checkValue("lambdaReduction", options.lambdaReduction);
  }
  if (method == IterativeMethod::PdhgTv) {
    checkValue("tvWeight", options.tvWeight);
  }
  // The scan, the grid and the data as every reconstruction checks them (glrecon/validate.h): a volume outside the beam,
  // a spacing of 1e-300 or projections near float's limit would otherwise end in an all-zero, NaN or infinite volume.
  checkScanAndGrid(geometry, grid, methodName(method));
  checkProjectionData(geometry, projections, "projections");
  int subsets = options.subsets;
  if (subsets == 0)
    subsets = (method == IterativeMethod::Sart || method == IterativeMethod::AsdPocs) ? static_cast<int>(views)
              : method == IterativeMethod::Osem ? static_cast<int>(std::min<std::size_t>(8, views))
                                                : 1;
  if (subsets < 1 || static_cast<std::size_t>(subsets) > views)
    throw UsageError(field("subsets") + ": expected 1 to " + std::to_string(views) + " (the number of projections), found " + std::to_string(subsets));
  if ((method == IterativeMethod::Sirt || !updatesBySubsets(method)) && subsets != 1)
    throw UsageError(std::string(field("subsets") + ": ") + methodName(method) + " uses every projection at once: expected 1, found " + std::to_string(subsets));
  if (options.order != SubsetOrder::Interleaved && options.order != SubsetOrder::Ordered && options.order != SubsetOrder::Random)
    throw UsageError(field("order") + ": expected interleaved, ordered or random, found " + std::to_string(static_cast<int>(options.order)));
  double lambda = options.lambda;
  if (lambda == 0.0)
    lambda = ((method == IterativeMethod::Sart || method == IterativeMethod::AsdPocs) && subsets == static_cast<int>(views) && views > 1) ? 0.8 : 1.0;
  if (!(lambda > 0.0 && lambda < 2.0)) throw UsageError(field("lambda") + ": expected a relaxation in (0, 2), found " + std::to_string(lambda));
  if (method == IterativeMethod::Cgls && options.positivity.value_or(false))
    throw UsageError(field("positivity") + ": cgls cannot clamp (it would break the conjugate directions); use sart, sirt or osem");
  // PDHG-TV always keeps x >= 0 (part of the problem it solves); its relaxation is its step sizes.
  if (!options.mask.empty() && options.mask.size() != voxels)
    throwInputError(field("roi"), "mask size", std::to_string(voxels) + " voxels", std::to_string(options.mask.size()));
  if (method == IterativeMethod::Osem && !nonNegative.data.empty()) {
    std::size_t negative = 0;
    float lowest = 0.0f;
    for (float v : given.data)
      if (v < 0.0f) {
        ++negative;
        lowest = std::min(lowest, v);
      }
    char text[256];
    std::snprintf(text, sizeof text,
                  "osem: %zu of %zu line integrals were negative (down to %.4g; noise where a ray crosses little or no object) and "
                  "were taken as 0 (osem is multiplicative)",
                  negative, given.data.size(), lowest);
    report.warning = text;
  }
  if (method == IterativeMethod::Osem &&
      std::none_of(projections.data.begin(), projections.data.end(), [](float b) { return b > 0.0f; }))
    throwInputError("projections", "values", "some positive line integral (osem)", "all zero or negative");
  if (options.initial) {
    const VolumeGrid g = options.initial->grid();
    auto same = [](double a, double b) { return std::abs(a - b) <= 1e-6 * std::max({1.0, std::abs(a), std::abs(b)}); };
    auto vec = [](auto a) { return std::to_string(a[0]) + "," + std::to_string(a[1]) + "," + std::to_string(a[2]); };
    if (g.size != grid.size)
      throwInputError(field("initial"), "DimSize", vec(grid.size) + " (the output grid)", vec(g.size));
    for (int a = 0; a < 3; ++a) {
      if (!same(g.spacing[a], grid.spacing[a]))
        throwInputError(field("initial"), "ElementSpacing", vec(grid.spacing) + " (the output grid)", vec(g.spacing));
      if (!same(g.origin[a], grid.origin[a]))
        throwInputError(field("initial"), "Offset", vec(grid.origin) + " (the output grid)", vec(g.origin));
    }
    checkVolumeToProject(options.initial->data.data(), grid, field("initial"));
    if (method == IterativeMethod::Osem)
      for (float v : options.initial->data)
        if (v < 0.0f) throwInputError(field("initial"), "voxel values", "finite non-negative values (osem)", std::to_string(v));
  }
  // Only cuda's operator keeps the TV methods' vectors on its device (ConeBeamOperator::makeVectors): elsewhere they
  // are counted here, before any work; where cuda cannot keep them, makeVectors counts them before making them.
  checkHostMemory(methodName(method), "the iterate and its work vectors for " + std::to_string(voxels) + " voxels and " +
                                          std::to_string(views) + " projections",
                  hostBytes(subsets, /*vectorsOnHost=*/op.backend() != Backend::Cuda));

  this->subsets = subsets;
  this->lambda = lambda;
}

std::uint64_t IterativeReconstructor::State::hostBytes(int subsetCount, bool vectorsOnHost) const {
  // What setUp and the steps allocate on the host, at most at once: volume-sized x, zeros, ones (setUp only), the
  // correction, CGLS's s and p, the operator's own copy on cpu; projection-sized A 1, the forward projections, the
  // subset's data and CGLS's r and q; B_S 1 per subset where it is cached (up to 512 MiB). Four bytes each.
  const std::uint64_t volume = std::uint64_t{4} * voxels, data = std::uint64_t{4} * views * pixels;
  const std::uint64_t cache = std::min<std::uint64_t>(volume * static_cast<std::uint64_t>(subsetCount), std::uint64_t{512} << 20);
  // Where the operator keeps no vectors on a device (vectorsOnHost), the TV methods' vectors are on the host: ASD-POCS's
  // iterate, the previous iterate, the volume after the data step, the TV field's three components and its gradient;
  // PDHG-TV's iterate and the previous one, the voxel steps, scratch, the gradient's dual (three volumes) and its
  // differences (three), A x twice, y, the ray steps and the data.
  const std::uint64_t tv = (method == IterativeMethod::AsdPocs ? 7 * volume : 0) + (method == IterativeMethod::PdhgTv ? 10 * volume + 5 * data : 0);
  const bool cached = updatesBySubsets(method) && !op.computesSubsetWeights();  // as setUp's cacheWeights
  return 6 * volume + 5 * data + (cached ? cache : 0) + (vectorsOnHost ? tv : 0);
}

void IterativeReconstructor::State::setUp() {
  start = Clock::now();
  report.subsets = subsets;
  report.lambda = lambda;
  report.dataNorm = std::sqrt(sumSquares(projections.data));
  order = subsetsInOrder(views, subsets, options.order, options.orderSeed);

  // ---- normalisations: A 1 per ray (all views at once), B_S 1 per subset (cached when it fits in 512 MiB) ----
  std::vector<float> ones(voxels, 1.0f);
  for (std::size_t i = 0; i < voxels; ++i) ones[i] = inside(i) ? 1.0f : 0.0f;
  all.resize(views);
  std::iota(all.begin(), all.end(), std::size_t{0});
  rayLength.resize(views * pixels);
  op.setVolume(ones.data());
  op.forward(all.data(), views, rayLength.data());
  // A ray shorter than one marching step (or, one sample per plane, half the smallest voxel) inside the volume is below
  // what A resolves: its length and its projection each carry an error of up to a sample's worth at the box's ends
  // (backends differ there by one sample), so r / length would amplify rounding into a large update at the volume's edge.
  const VolumeGrid& g = op.grid();
  const double sampleFloor = op.step() > 0.0 ? op.step() : 0.5 * std::min({g.spacing.x, g.spacing.y, g.spacing.z});
  rayFloor = static_cast<float>(std::max(kRelativeFloor * *std::max_element(rayLength.begin(), rayLength.end()), sampleFloor));
  // B_S 1 per subset, kept when it fits in 512 MiB and the iterate is on the host (a device op computes
  // it next to the iterate; otherwise updateIterate computes it each time).
  cacheWeights = updatesBySubsets(method) && !op.computesSubsetWeights() && static_cast<double>(order.size()) * voxels * 4 <= 512.0 * (1 << 20);
  zeros.assign(voxels, 0.0f);
  if (cacheWeights) {
    const std::vector<float> onesProjections(views * pixels, 1.0f);
    for (const std::vector<std::size_t>& subset : order) backInto(onesProjections.data(), subset, cachedWeights.emplace_back(voxels).data());
  }
  report.setupSeconds = since(start);

  // ---- the starting volume ----
  x.assign(voxels, 0.0f);
  if (options.initial) {
    x = options.initial->data;
  } else if (method == IterativeMethod::Osem) {
    // A constant whose projections have the data's total: the usual flat start of MLEM, positive everywhere.
    double sb = 0, sa = 0;
    for (float v : projections.data) sb += v;
    for (float a : rayLength) sa += a;
    std::fill(x.begin(), x.end(), static_cast<float>(sb / sa));
  }
  for (std::size_t i = 0; i < voxels; ++i)
    if (!inside(i)) x[i] = 0.0f;

  if (method == IterativeMethod::Cgls) {
    // CGLS (Hestenes & Stiefel on the normal equations): r = b - A x, s = B r, p = s; per iteration
    // q = A p, alpha = |s|^2 / |q|^2, x += alpha p, r -= alpha q, s = B r, beta = |s_new|^2 / |s|^2, p = s + beta p.
    startCgls();
  } else if (method == IterativeMethod::PdhgTv) {
    startPdhg();
  } else {
    rule.multiplicative = method == IterativeMethod::Osem;
    rule.lambda = static_cast<float>(lambda);
    // ASD-POCS projects onto x >= 0 after every data step: part of the method.
    rule.positivity = options.positivity.value_or(method == IterativeMethod::Sart || method == IterativeMethod::Sirt) ||
                      method == IterativeMethod::AsdPocs;
    op.setVolume(x.data());
    op.setUpdateMask(options.mask.empty() ? nullptr : options.mask.data());
    hostCurrent = false;
    // Where the operator keeps the data on its device (cuda), each subset's correction is formed there too: per
    // subset nothing crosses to the host (SIRT at 256^3 shipped all 360 projections each way every iteration).
    correctionsOnDevice = op.setSubsetData(projections.data.data(), rayLength.data(), rayFloor, method == IterativeMethod::Osem);
    if (method == IterativeMethod::AsdPocs) startTotalVariation();
  }
  iterationStart = Clock::now();
}

void IterativeReconstructor::State::startCgls() {
  makeVectors(3, 2);
  OperatorVectors& v = *vectors;
  vx = v.volume();
  vs = v.volume();
  vp = v.volume();
  vr = v.projections();
  vq = v.projections();
  v.setMask(options.mask.empty() ? nullptr : options.mask.data());
  v.upload(vx, x.data());
  v.forward(vx, vq);
  v.upload(vr, projections.data.data());
  v.axpy(-1.0, vq, vr);  // r = b - A x
  v.back(vr, vs);
  v.copy(vs, vp);
  gamma = v.dot(vs, vs);
  iterateInVectors = true;
  hostCurrent = false;
}

void IterativeReconstructor::State::cglsIteration() {
  OperatorVectors& v = *vectors;
  const double residual = std::sqrt(v.dot(vr, vr));
  // The record is this iteration's: the residual of the iterate it started from, as the subset methods report.
  const auto record = [&] { last = {iteration, 1, 1, residual, since(iterationStart)}; };
  if (!(gamma > 0.0)) return record();  // B r = 0: x is the least-squares solution B knows
  // CGLS steps alpha = |B r|^2 / |A p|^2, which equals the exact line search <r, A p> / |A p|^2 only where B = A^T.
  // With the interpolating pair (B a close but unmatched adjoint) the two part and, past some iteration, every step
  // overshoots and raises the residual (15 views of the phantom: 0.027 ||b|| at iteration 10, 2.6 ||b|| at 30). So the
  // step is the line search itself, the same step for a matched pair and never a rise for any pair; and where the
  // direction stops descending (<r, A p> <= 0, conjugacy lost) the method restarts from B r, as TIGRE's CGLS restarts
  // on a rising residual. Where B r does not descend either, no direction B gives lowers the residual: the run stops.
  v.forward(vp, vq);
  double rq = v.dot(vr, vq), qq = v.dot(vq, vq);
  if (!(rq > 0.0) && !directionIsGradient) {
    v.copy(vs, vp);
    directionIsGradient = true;
    ++report.restarts;
    v.forward(vp, vq);
    rq = v.dot(vr, vq);
    qq = v.dot(vq, vq);
  }
  if (!(rq > 0.0) || !(qq > 0.0)) {
    report.stopReason = "no direction the back projection gives lowers the residual any more (iteration " + std::to_string(iteration) +
                        "): stopped with that iteration's volume";
    stopped = true;
    return record();
  }
  const double alpha = rq / qq;
  v.axpy(alpha, vp, vx);
  v.axpy(-alpha, vq, vr);
  v.back(vr, vs);
  const double next = v.dot(vs, vs);
  const double beta = next / gamma;
  gamma = next;
  v.xpay(vs, beta, vp);  // p = s + beta p
  directionIsGradient = false;
  hostCurrent = false;
  record();
}

void IterativeReconstructor::State::subsetUpdate() {
  const std::vector<std::size_t>& subset = order[subsetsDone];
  if (correctionsOnDevice) {
    squares += op.correctSubset(subset.data(), subset.size());
    op.updateSubset(nullptr, subset.data(), subset.size(), rule, nullptr);
    hostCurrent = false;
    ++subsetsDone;
    last = {iteration, static_cast<int>(subsetsDone), static_cast<int>(order.size()), std::sqrt(squares), since(iterationStart)};
    return;
  }
  const float* data = gather(subset);
  const std::size_t values = subset.size() * pixels;
  ax.resize(values);
  op.forward(subset.data(), subset.size(), ax.data());
  correction.resize(values);
  // On every core (single-threaded this loop was a fifth of a SIRT iteration at 256^3 beside the GPU's projections),
  // its sum of squares in fixed blocks added in order (blockedSum): the same bits for any number of threads.
  squares += blockedSum(values, [&](std::size_t j) {
    const float length = rayLength[subset[j / pixels] * pixels + j % pixels];
    const float residual = data[j] - ax[j];
    if (method == IterativeMethod::Osem)
      // b / (A x): rays that miss the volume carry no information; a ray whose forward projection is 0
      // while b > 0 (the voxels it crosses are all 0 and stay 0 multiplicatively) gets no update either.
      correction[j] = (length > rayFloor && ax[j] > 0.0f) ? data[j] / ax[j] : 0.0f;
    else
      correction[j] = length > rayFloor ? residual / length : 0.0f;
    return static_cast<double>(residual) * residual;
  });
  // A voxel that only grazes a view's detector edge has a weight of rounding size there, and its update
  // (a ratio of two such numbers) is rounding too: texture units interpolate with 8-bit fractions, so a
  // bilinear weight under 1/256 of a full one reads 0 on one backend and not on another. Such voxels wait
  // for the subsets that see them: below 1/256 of one view's largest weight a voxel counts as unseen
  // (SubsetRule, applySubsetRule).
  op.updateSubset(correction.data(), subset.data(), subset.size(), rule, cacheWeights ? cachedWeights[subsetsDone].data() : nullptr);
  hostCurrent = false;
  ++subsetsDone;
  last = {iteration, static_cast<int>(subsetsDone), static_cast<int>(order.size()), std::sqrt(squares), since(iterationStart)};
}

// PDHG-TV's set-up, Pock & Chambolle's diagonal preconditioning (ICCV 2011, alpha = 1) of K = [A; nu D]: per ray
// sigma = 1 / (A 1), the row sums of A (rays that miss the volume keep a zero dual); per gradient component
// 1 / (2 nu) (a row of D holds +1 and -1); per voxel tau = 1 / (B 1 + 6 nu), the column sums of A and of nu D (a voxel
// enters at most six differences). Every step fits its ray's or voxel's own scale, as SIRT's normalisation does, and
// no step needs tuning; the guarantee holds for B = A^T (the matched pair). nu = |A| / |D| balances the two blocks
// (Sidky, Jorgensen & Pan): without it the gradient's dual moved by D xbar / 2 a step towards a bound of lambda and
// TV never acted within 50 iterations. |A|^2 is bounded by max(B 1) max(A 1) (Schur), |D|^2 by 12. The TV weight
// lambda = tvWeight s |A|^2, s = max b / max A 1 the data's density scale, so tvWeight is unitless (doubling the
// densities doubles lambda, as the data term's pull doubles).
void IterativeReconstructor::State::startPdhg() {
  const auto setUpStart = Clock::now();
  std::vector<float> rayStep(views * pixels), voxelStep(voxels);
  {
    const std::vector<float> onesProjections(views * pixels, 1.0f);
    std::vector<float> columnSums(voxels);
    backInto(onesProjections.data(), all, columnSums.data());
    float largestColumn = 0.0f;
    for (std::size_t i = 0; i < voxels; ++i) largestColumn = std::max(largestColumn, columnSums[i]);
    for (std::size_t i = 0; i < rayStep.size(); ++i) rayStep[i] = rayLength[i] > rayFloor ? 1.0f / rayLength[i] : 0.0f;
    const double largestB = *std::max_element(projections.data.begin(), projections.data.end());
    const double longest = *std::max_element(rayLength.begin(), rayLength.end());
    const double density = longest > 0.0 ? std::max(largestB, 0.0) / longest : 0.0;
    const double normASquared = static_cast<double>(largestColumn) * longest;
    nu = std::sqrt(normASquared / 12.0);
    if (!(nu > 0.0)) nu = 1.0;  // no ray crosses the volume: nothing to balance
    for (std::size_t i = 0; i < voxels; ++i)
      voxelStep[i] = inside(i) ? static_cast<float>(1.0 / (std::max(columnSums[i], 0.0f) + 6.0 * nu)) : 0.0f;
    // The dual of lambda TV(x) = (lambda / nu) |nu D x|_1: the ball of radius lambda / nu.
    dualBound = options.tvWeight * density * normASquared / nu;
  }
  // Ten volumes (x, x_previous, the voxel steps, scratch, z and D xbar of three each), five scans (A x twice, y, the ray
  // steps, b). No mask on the vectors: the voxel steps are 0 outside the region, so x stays 0 there.
  makeVectors(10, 5);
  OperatorVectors& v = *vectors;
  vx = v.volume();
  vxPrevious = v.volume();
  vVoxelStep = v.volume();
  vScratch = v.volume();
  vDualGradient = v.field();
  vDifferences = v.field();
  vAxNow = v.projections();
  vAxPrevious = v.projections();
  vDualData = v.projections();
  vRayStep = v.projections();
  vData = v.projections();
  v.upload(vx, x.data());
  v.upload(vxPrevious, x.data());
  v.upload(vVoxelStep, voxelStep.data());
  v.upload(vRayStep, rayStep.data());
  v.upload(vData, projections.data.data());
  v.forward(vx, vAxNow);
  v.copy(vAxNow, vAxPrevious);
  iterateInVectors = true;
  hostCurrent = false;
  report.setupSeconds += since(setUpStart);
}

// One preconditioned Chambolle-Pock iteration (theta = 1) with xbar = 2 x - x_previous, whose projection is
// 2 A x - A x_previous (A is linear: no extra forward projection):
//   y <- (y + sigma (A xbar - b)) / (1 + sigma)     per ray: the data term's proximal step (1/2 |. - b|^2)
//   z <- clip(z + nu D xbar / (2 nu), lambda / nu)  per voxel onto the ball: the dual of lambda TV
//   x <- max(0, x - tau (B y + nu D^T z)), 0 outside the region
// then A x for the next iteration; the residual recorded is |b - A x| of the iterate the iteration started from. On the
// vectors: per iteration one forward and one back projection, and only the residual's sum crosses to the host.
void IterativeReconstructor::State::pdhgIteration() {
  OperatorVectors& v = *vectors;
  const double residual = std::sqrt(v.distanceSquared(vData, vAxNow));
  v.dataDualStep(vDualData, vAxNow, vAxPrevious, vData, vRayStep);
  v.extrapolate(vx, vxPrevious, vScratch);
  v.forwardDifferences(vScratch, 0.5f, vDifferences);
  v.clipToBall(vDualGradient, vDifferences, static_cast<float>(dualBound));
  v.back(vDualData, vScratch);
  v.addTransposedDifferences(vDualGradient, static_cast<float>(nu), vScratch);
  std::swap(vx, vxPrevious);
  v.projectedStep(vxPrevious, vVoxelStep, vScratch, vx);
  std::swap(vAxNow, vAxPrevious);
  v.forward(vx, vAxNow);
  hostCurrent = false;
  last = {iteration, 1, 1, residual, since(iterationStart)};
}

// ASD-POCS's vectors: the iterate, the previous iterate (the start), the volume after the data step, the TV gradient
// and its field (four volumes and a field of three; no scans), the mask on the TV gradient.
void IterativeReconstructor::State::startTotalVariation() {
  makeVectors(7, 0);
  OperatorVectors& v = *vectors;
  vx = v.volume();
  vPrevious = v.volume();
  vAfterData = v.volume();
  vTvGradient = v.volume();
  vTvField = v.field();
  v.setMask(options.mask.empty() ? nullptr : options.mask.data());
  v.upload(vPrevious, x.data());
}

// ASD-POCS's TV phase after a SART sweep (Sidky & Pan 2008, as TIGRE's ASD_POCS): tvSteps steps of length tvStep
// along the normalised TV gradient. The first iteration sets tvStep = tvAlpha |dx|, dx the sweep's change; whenever
// the TV steps move the volume more than tvRatio |dx| they would outweigh the data, and tvStep shrinks by tvReduction.
// The relaxation shrinks by lambdaReduction per iteration so that the data steps settle too. x >= 0 after both phases.
// On the vectors, from the operator's volume and back into it (a copy on the device on cuda): only the norms cross.
void IterativeReconstructor::State::totalVariationSteps() {
  OperatorVectors& v = *vectors;
  v.fromOperatorVolume(vx);
  const double largest = v.largestMagnitude(vx);
  const double change = std::sqrt(v.distanceSquared(vx, vPrevious));
  if (tvStep == 0.0) tvStep = options.tvAlpha * change;
  v.copy(vx, vAfterData);
  // eps: the smoothing of |D x| at 0, far below any edge worth keeping (1e-6 of the largest density).
  const float eps = static_cast<float>(std::max(largest, 1e-30) * 1e-6);
  for (int step = 0; step < options.tvSteps && tvStep > 0.0; ++step) {
    v.totalVariationGradient(vx, eps, vTvField, vTvGradient);
    const double norm = std::sqrt(v.dot(vTvGradient, vTvGradient));
    if (!(norm > 0.0)) break;
    // x -= scale g in float: axpy's product of the float scale and g in double is exact, so its rounding to float is
    // the float product's.
    const float scale = static_cast<float>(tvStep / norm);
    v.axpy(-static_cast<double>(scale), vTvGradient, vx);
  }
  // x >= 0 again: TV's steps may take a voxel at 0 below it, and the result is a density.
  v.clampNegative(vx);
  const double moved = v.distanceSquared(vx, vAfterData);
  if (std::sqrt(moved) > options.tvRatio * change) tvStep *= options.tvReduction;
  rule.lambda = static_cast<float>(rule.lambda * options.lambdaReduction);
  v.toOperatorVolume(vx);
  v.copy(vx, vPrevious);
  hostCurrent = false;
}

// --stop-residual and --stop-change on the iteration just recorded (its residual: of the iterate it started from).
void IterativeReconstructor::State::applyStoppingRules() {
  const std::vector<IterationRecord>& done = report.iterations;
  const double now = done.back().residual;
  char text[160];
  if (options.stopResidual > 0.0 && now <= options.stopResidual * report.dataNorm) {
    std::snprintf(text, sizeof text, "the residual reached %.4g of ||b|| (measured by iteration %d on the volume it started from; %s %g)",
                  now / report.dataNorm, done.back().iteration, field("stopResidual").c_str(), options.stopResidual);
  } else if (options.stopChange > 0.0 && done.size() >= 2 && done[done.size() - 2].residual - now < options.stopChange * done[done.size() - 2].residual) {
    const double before = done[done.size() - 2].residual;
    std::snprintf(text, sizeof text, "the residual fell by %.3g of itself from iteration %d's measure to iteration %d's (%s %g)",
                  (before - now) / before, done.back().iteration - 1, done.back().iteration, field("stopChange").c_str(), options.stopChange);
  } else {
    return;
  }
  report.stopReason = text;
  stopped = true;
}

IterativeReconstructor::IterativeReconstructor(ConeBeamOperator& op, const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                                               const IterativeOptions& options)
    : state_(std::make_unique<State>(op, geometry, projections, grid, options)) {
  State& st = *state_;
  st.views = geometry.size();
  st.pixels = static_cast<std::size_t>(geometry.detector.nu) * geometry.detector.nv;
  st.voxels = grid.voxelCount();
  st.check();
  st.setUp();
}

IterativeReconstructor::~IterativeReconstructor() = default;

bool IterativeReconstructor::step() {
  State& st = *state_;
  if (st.iteration > st.options.iterations) return false;
  if (st.method == IterativeMethod::Cgls) {
    st.cglsIteration();
  } else if (st.method == IterativeMethod::PdhgTv) {
    st.pdhgIteration();
  } else {
    st.subsetUpdate();
  }
  if (st.last.subset == st.last.subsets) {
    // The device's queued work (the last subset's back projection and update) counts in its iteration, not the next's
    // or none: GPU calls return before their passes finish (bench-iterative's compute SIRT read 0.016 s without it).
    st.op.synchronize();
    st.last.seconds = since(st.iterationStart);
    // ASD-POCS's TV phase ends its iteration: its time counts in the iteration's.
    if (st.method == IterativeMethod::AsdPocs) {
      st.totalVariationSteps();
      st.last.seconds = since(st.iterationStart);
    }
    // Any method whose residual rose over three iterations running is past its best (on few views SART's and SIRT's
    // errors grow with the iterations): said once, in the report. A rise is one above rounding's reach (1e-4 of the
    // residual: the residual sums ~1e6 float terms; the recursion of CGLS and the subset methods' partial sums drift
    // by ~1e-6): a plateau is not a rise.
    // Not PDHG-TV: its objective holds TV too, and its residual may rise on the way to the optimum by design.
    if (st.method != IterativeMethod::PdhgTv && !st.report.iterations.empty() &&
        st.last.residual > st.report.iterations.back().residual * (1.0 + 1e-4)) {
      if (++st.risingIterations == 3 && !st.risingWarned) {
        st.risingWarned = true;
        st.report.warning += std::string(st.report.warning.empty() ? "" : "; ") + methodName(st.method) +
                             ": the residual rose over the 3 iterations to iteration " + std::to_string(st.last.iteration) + " (to " +
                             std::to_string(st.last.residual) + "): more iterations make the result worse; use fewer (" +
                             field("iterations") + ")";
      }
    } else {
      st.risingIterations = 0;
    }
    st.report.iterations.push_back(st.last);
    if (!st.stopped) st.applyStoppingRules();
    if (st.stopped) st.iteration = st.options.iterations;
    ++st.iteration;
    st.subsetsDone = 0;
    st.squares = 0;
    st.iterationStart = Clock::now();
  }
  return st.iteration <= st.options.iterations;
}

const IterationRecord& IterativeReconstructor::last() const { return state_->last; }

int IterativeReconstructor::subsets() const {
  return updatesBySubsets(state_->method) ? static_cast<int>(state_->order.size()) : 1;
}

ConeBeamOperator& IterativeReconstructor::op() { return state_->op; }

bool IterativeReconstructor::iterateOnOperator() const { return !state_->hostCurrent && !state_->iterateInVectors; }

const Voxels& IterativeReconstructor::volume() {
  State& st = *state_;
  if (!st.hostCurrent) {
    if (st.iterateInVectors)
      st.vectors->download(st.vx, st.x.data());
    else
      st.op.readVolume(st.x.data());
    st.hostCurrent = true;
  }
  return st.x;
}

Image IterativeReconstructor::finish(IterativeReport* report) {
  State& st = *state_;
  volume();
  // The final residual: one more forward projection of the result.
  std::vector<float> final(st.views * st.pixels);
  st.op.setVolume(st.x.data());
  st.op.forward(st.all.data(), st.views, final.data());
  double squares = 0;
  for (std::size_t i = 0; i < final.size(); ++i) {
    const double residual = static_cast<double>(st.projections.data[i]) - final[i];
    squares += residual * residual;
  }
  st.report.finalResidual = std::sqrt(squares);
  st.report.seconds = since(st.start);
  // The checks above keep every input sound; should the iteration still diverge into NaN or infinity (a step the
  // operator cannot resolve, say), the result is refused rather than written as garbage.
  checkFiniteValues(st.x.data(), st.grid.size, methodName(st.method), "reconstructed volume", 3.0e38);
  if (report) *report = st.report;
  Image out(st.grid);
  out.data = std::move(st.x);
  return out;
}

Image reconstructIterative(ConeBeamOperator& op, const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                           const IterativeOptions& options, IterativeReport* report, const IterationCallback& callback) {
  IterativeReconstructor reconstructor(op, geometry, projections, grid, options);
  for (bool more = true; more;) {
    more = reconstructor.step();
    const IterationRecord& r = reconstructor.last();
    if (callback && (r.subset == r.subsets || options.everySubset)) callback(r, reconstructor);
  }
  return reconstructor.finish(report);
}

}  // namespace glrecon
