#pragma once
// The iterative methods' host arithmetic: sums in fixed blocks on every core, and OperatorVectors over host memory for
// the operators that keep no vectors on their device (cpu, the GL backends, a split operator). The tests compare the
// device's vectors (cuda) with these, operation by operation.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "glrecon/operator.h"
#include "glrecon/parallel.h"

namespace glrecon::detail {

// The host's vector operations (CGLS, PDHG-TV, ASD-POCS's TV phase) on every core: single-threaded they took half of
// a CGLS or PDHG-TV iteration at 256^3 on a 16-core host beside the GPU's projections. Sums are taken per block of
// kVectorBlock items in parallel and the blocks' sums added in order, so a result does not depend on the number of
// threads (the same bits on every machine).
inline constexpr std::size_t kVectorBlock = std::size_t{1} << 16;

template <class Term>
double blockedSum(std::size_t n, const Term& term) {
  const std::size_t blocks = (n + kVectorBlock - 1) / kVectorBlock;
  std::vector<double> partial(blocks, 0.0);
  parallelFor(blocks, 1, 0, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b) {
      double sum = 0;
      for (std::size_t i = b * kVectorBlock, end = std::min(n, i + kVectorBlock); i < end; ++i) sum += term(i);
      partial[b] = sum;
    }
  });
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

template <class Body>
void forEachIndex(std::size_t n, const Body& body) {
  parallelFor(n, kVectorBlock, 0, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) body(i);
  });
}

/// B (Adjoint) of host projections into a host volume: the operator's volume set to `zeros`, back-projected into, read.
void backProjectInto(ConeBeamOperator& op, const std::vector<float>& zeros, const float* values, const std::vector<std::size_t>& views,
                     float* out);

/// OperatorVectors over host memory for `op` (whole-grid volumes, every view's projections): A and B through the
/// operator's forward() and back() of host memory, the rest on every core in the float operations operator.h writes.
/// `zeros` (a volume of zeros) and `all` (every view, in order) must outlive the vectors.
std::unique_ptr<OperatorVectors> makeHostVectors(ConeBeamOperator& op, const std::vector<float>& zeros, const std::vector<std::size_t>& all);

}  // namespace glrecon::detail
