#pragma once
/// One operator over slabs of y rows ("parts"), each an operator of the backend holding only its rows: the iterative
/// methods over volumes no single device holds, over several devices of one process, and over the ranks of an MPI job
/// (glrecon/cluster.h: `mpirun -np 4 glrecon sirt ...`, rank r holding consecutive parts). On it:
///   forward       every part projects its rows (the whole grid's rays and samples, glrecon/operator.h); the parts'
///                 projections are added in part order, ((p0 + p1) + p2) + ..., across ranks by Cluster::sumInOrder:
///                 the same bits for any number of ranks holding the same parts. Against one operator of the whole
///                 grid the sum differs by the order of the additions only (tests/recon/split_test.cpp bounds it);
///   back, updateSubset   each part its own rows, exactly as the whole grid computes them (no communication; the
///                 subset rule's weight floor from the whole volume's largest weight, SubsetRule::largestWeight);
///   setVolume, readVolume   the whole grid in host memory on every rank (readVolume gathers every rank's rows).
/// The iterative methods (glrecon/iterative.h) run over it unchanged: their host vectors are the whole grid on every
/// rank, and every rank computes the same values from the same sums, so rank 0 alone writes the result (in one
/// process on cuda their vectors stay on the devices, below).
/// Backends: cpu and cuda (the GL backends' iterative passes hold the whole grid: makeSplitOperator refuses them). The
/// subset methods' corrections: where every part of a one-process split keeps the data on its device (cuda,
/// setSubsetData), each subset's projections are summed on the devices, in part order on the first part's device (peer
/// copies between GPUs, where the host's sum moved every part's projections out and the corrections back in), the sum
/// copied to the other parts, and each part forms the corrections next to its rows: the same bits as the host's sum
/// and corrections. The methods' vectors (makeVectors) likewise: each part's rows on its device, the projections a
/// copy on each (forward summed as above), the TV stencils reading across a part's edges from its neighbours' vectors.
/// Across ranks, or where a device lacks the room, both stay on the host. A process's parts on different GPUs are
/// called side by side, a thread per GPU, each GPU's parts in turn; cpu parts one after another (each takes every
/// core). On cuda a process holds at most 8 parts (one constant-memory matrix bank each): more are
/// refused before any is made (a UsageError naming slabs: --slabs).
#include <memory>
#include <utility>
#include <vector>

#include "glrecon/operator.h"

namespace glrecon {

class Cluster;

struct SplitOptions {
  int parts = 0;                ///< slabs of y rows; 0: one per rank and device
  std::vector<int> devices;     ///< this process's devices, given to its parts in turn (empty: OperatorOptions::device)
  Cluster* cluster = nullptr;   ///< the MPI job, whose ranks hold consecutive parts; nullptr: this process holds them all
  bool sumOnDevices = true;     ///< the subset methods' sums on the devices where they can be (false: on the host)
};

/// The first row of each of `parts` slabs of a grid of `rows` y rows, and `rows` last: slab p holds [first[p],
/// first[p + 1]), each a multiple of kSlabGranule rows but the last, as even as that allows. UsageError naming
/// `--slabs` when parts is below 1 or above the granules the grid has.
std::vector<int> splitRows(int rows, int parts);

/// The slabs a split makes over `ranks` ranks: split.parts, or one per rank and device.
int splitParts(const SplitOptions& split, int ranks);

/// The slabs rank `rank` of `ranks` holds, [first, last): consecutive, as even as `parts` allows.
std::pair<int, int> slabsOfRank(int parts, int ranks, int rank);

/// The operator the iterative methods run over: the split operator where there are several ranks (split.cluster),
/// slabs or devices, else (one slab on one device of one process) the whole grid's operator itself on options.device,
/// or on the one device split.devices names. The command line, bench-iterative and Python make theirs here.
std::unique_ptr<ConeBeamOperator> makeOperatorOrSplit(Backend backend, const Geometry& geometry, const VolumeGrid& grid,
                                                      const OperatorOptions& options, const SplitOptions& split);

/// The split operator (see the top of this file). Throws UsageError for a backend that cannot hold part of the grid in
/// its iterative passes, for fewer parts than ranks, for more than 8 cuda parts in one process, and as makeOperator does.
std::unique_ptr<ConeBeamOperator> makeSplitOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid,
                                                    const OperatorOptions& options, const SplitOptions& split);

}  // namespace glrecon
