#pragma once
/// Several processes reconstructing one volume: the ranks of an MPI job (`mpirun -np N glrecon fdk ...`), one process
/// per node or per GPU. The FDK scheduler (glrecon/fdk.h, FdkOptions::cluster) cuts the volume into slabs of y rows as it
/// does for several GPUs of one machine; rank 0 deals them out on demand (a slower rank takes fewer; a rank asks for
/// its next slab as its device nears the end of the last), and each rank reads and filters only the detector rows of
/// the slabs it holds (slabRowBand), backprojects them on its device and writes them at their offsets into the one
/// output file. Every slab is computed as one block computes it, so the file equals a one-process run's bit for bit.
///
/// Implemented over MPI (src/recon/cluster.cpp, where the build found MPI) and, for tests and for the same band-reading
/// configuration without MPI, as one process (singleProcessCluster).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace glrecon {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// This rank's index among the ranks on its host (a node's GPUs are shared out by it).
  virtual int localRank() const { return rank(); }
  /// How many ranks run on this rank's host (all of them: they share its page cache).
  virtual int localSize() const { return size(); }
  /// The host's name, for reports and messages.
  virtual std::string host() const;

  // ---- collectives: every rank calls them, in the same order ----
  /// The smallest of every rank's `value`.
  virtual std::uint64_t minimum(std::uint64_t value) = 0;
  /// Rank 0's `text` on every rank.
  virtual std::string broadcast(const std::string& text) = 0;
  /// Every rank's `text`, in rank order, on rank 0 (elsewhere: empty).
  virtual std::vector<std::string> gather(const std::string& text) = 0;
  /// Returns once every rank has called it.
  virtual void barrier() = 0;
  /// The largest of every rank's `value`.
  virtual double maximum(double value) = 0;
  /// Sums of float vectors in one fixed order (the split operator's forward projections, glrecon/split.h): rank r
  /// holds `terms` (at least one, each `n` floats), and on return `sum` on every rank is the left fold over every
  /// rank's terms in rank order, ((t0 + t1) + t2) + ..., element by element: the same bits however the terms are
  /// shared out among the ranks (MPI_Allreduce's order is the library's and may change with the number of ranks).
  virtual void sumInOrder(const std::vector<const float*>& terms, std::size_t n, float* sum) = 0;
  /// Rank `root`'s `values` on every rank.
  virtual void broadcast(int root, float* values, std::size_t n) = 0;
  /// Starts dealing items 0 .. count-1 (rank 0 serves them; a collective).
  virtual void deal(std::size_t count) = 0;

  // ---- dealing, from any thread once deal() has returned ----
  /// The next item for this rank, in increasing order over the cluster; nullopt once every item is taken. A rank may
  /// ask before it has finished the items it holds (the FDK scheduler asks one slab ahead).
  virtual std::optional<std::size_t> next() = 0;
  /// This rank has finished one of its items: rank 0 hears of it with the rank's next request, or at once once the
  /// rank was told that nothing is left. Every item next() gave must be finished: rank 0 waits to hear of each.
  virtual void finishedOne() {}
  /// On rank 0: items the other ranks have finished and said so; 0 elsewhere.
  virtual std::size_t finishedElsewhere() const { return 0; }

  // ---- ranks standing aside (ranksThatWork below; the commands' RankRoles, src/app/options.h) ----
  /// Every rank of this rank's host's `value`, in the order of their local ranks (a collective of the host's ranks).
  virtual std::vector<int> onThisHost(int value) = 0;
  /// The ranks that pass `works`, as a cluster of their own (numbered in order; its rank 0 is this cluster's), or
  /// nullptr on a rank that passes false: a collective. Where this cluster's ranks were given their share of their
  /// host's cores, the working ranks of each host share out the cores of those standing aside.
  virtual std::unique_ptr<Cluster> keep(bool works) = 0;
  /// Returns once every rank has called it, keeping no core busy meanwhile (a rank standing aside waits here while
  /// the others work: a blocking MPI barrier would poll on a core the working ranks could use).
  virtual void barrierIdly() = 0;
};

/// Which of a host's ranks work (true) where each device drives at most `perDevice` of them, the lowest local ranks
/// first: `devices` holds each local rank's device in local rank order. perDevice 0: every rank works.
std::vector<bool> ranksThatWork(const std::vector<int>& devices, int perDevice);

/// A cluster of one process: the band-reading configuration without MPI (tests compare it with one block).
std::unique_ptr<Cluster> singleProcessCluster();

/// The MPI job this process belongs to: started where the build has MPI and the process was launched by mpirun (its
/// environment says so); nullptr otherwise. A build without MPI launched by mpirun with several ranks throws UsageError
/// (each copy would write the whole volume). Call once, first thing in main; endCluster() before returning.
Cluster* startCluster(int* argc, char*** argv);
void endCluster();
/// Where an MPI job runs: ends every rank with `message` on stderr (prefixed with this rank and host) and `code`; never
/// returns. Elsewhere it returns and the caller exits as usual.
void abortCluster(const std::string& message, int code);
/// The process's cluster where startCluster made one, nullptr otherwise.
Cluster* currentCluster();
/// True where the build has MPI.
bool clusterBuiltWithMpi();
/// The messaging layer startCluster asks Open MPI for, from mpirun's environment before MPI_Init: "ob1" (shared memory)
/// where every rank runs on this host (`worldSize` equals `localSize`: OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE)
/// and the user chose none (`chosen`: OMPI_MCA_pml, which `--mca pml` sets too); nullptr otherwise (the site's choice
/// stands). Any argument may be null (unset).
const char* oneHostMessagingLayer(const char* worldSize, const char* localSize, const char* chosen);
/// Sets TCP_NODELAY on this process's connected TCP sockets whose peer is a loopback address: the link to the host's
/// MPI daemon, which Open MPI's PMIx opens without it (see startCluster). Returns how many sockets it set.
int sendLoopbackMessagesAtOnce();
/// What fdk and the iterative commands print under mpirun about ranks sharing a device (without "glrecon: " and the
/// newline), or "" for nothing: from the host's second rank (`localRank` 1 of `localSize`) where --gpu gave at most one
/// device (`devicesGiven`). Where the backend has several `devices`, it names --gpu all; where a CUDA host has one GPU
/// (`cuda`), it says the ranks share it and that one process is faster. (A GL backend's one device may be Mesa's
/// software renderer, not a GPU: nothing is said.)
std::string sharedDeviceNotice(int localRank, int localSize, std::size_t devicesGiven, int devices, int device,
                               const std::string& backendName, bool cuda, const std::string& host);

}  // namespace glrecon
