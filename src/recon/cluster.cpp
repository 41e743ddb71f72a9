// Clusters (glrecon/cluster.h): one process, or the ranks of an MPI job. Rank 0 deals items (slabs) from a thread of its
// own, so that a rank asking for work is answered while rank 0's own worker backprojects: MPI's one-sided atomics would
// need no thread, but over TCP between nodes Open MPI emulates them with messages that progress only while the target
// is inside MPI, which a rank busy on its GPU is not for seconds at a time.
#include "glrecon/cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/parallel.h"

#ifdef GLRECON_HAVE_MPI
#include <mpi.h>
#endif

namespace glrecon {

std::string Cluster::host() const {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return name;
}

namespace {

// Items 0 .. count-1, each taken once, in increasing order, from any thread.
class Counter {
 public:
  void reset(std::size_t count) {
    count_ = count;
    next_ = 0;
  }
  std::optional<std::size_t> take() {
    const std::size_t item = next_++;
    if (item >= count_) return std::nullopt;
    return item;
  }

 private:
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_{0};
};

// sum[i] = the left fold of the terms over elements [begin, begin + n), continuing from sum[i] (`continuing`) or
// starting from the first term; one element's additions in term order on any number of threads.
void foldTerms(const std::vector<const float*>& terms, std::size_t begin, std::size_t n, float* sum, bool continuing) {
  if (terms.empty()) {
    if (!continuing) std::fill_n(sum, n, 0.0f);
    return;
  }
  parallelFor(n, std::size_t{1} << 16, 0, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      float s = continuing ? sum[i] + terms[0][begin + i] : terms[0][begin + i];
      for (std::size_t t = 1; t < terms.size(); ++t) s += terms[t][begin + i];
      sum[i] = s;
    }
  });
}

class SingleProcess final : public Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::uint64_t minimum(std::uint64_t value) override { return value; }
  std::string broadcast(const std::string& text) override { return text; }
  std::vector<std::string> gather(const std::string& text) override { return {text}; }
  void barrier() override {}
  double maximum(double value) override { return value; }
  void sumInOrder(const std::vector<const float*>& terms, std::size_t n, float* sum) override { foldTerms(terms, 0, n, sum, false); }
  void broadcast(int, float*, std::size_t) override {}
  void deal(std::size_t count) override { items_.reset(count); }
  std::optional<std::size_t> next() override { return items_.take(); }
  std::vector<int> onThisHost(int value) override { return {value}; }
  std::unique_ptr<Cluster> keep(bool works) override { return works ? std::make_unique<SingleProcess>() : nullptr; }
  void barrierIdly() override {}

 private:
  Counter items_;
};

// Launched by mpirun (Open MPI, MPICH, or a PMIx launcher such as srun): its environment says so.
int launchedRanks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (const char* value = std::getenv(name)) return std::max(1, std::atoi(value));
  if (std::getenv("PMIX_RANK")) return 1;
  return 0;
}

#ifdef GLRECON_HAVE_MPI
constexpr int kAsk = 1, kGive = 2, kSum = 3, kFinished = 4;

class MpiCluster final : public Cluster {
 public:
  // The job's ranks (MPI_COMM_WORLD), or those of `comm` (owned) that keep() made: `shareCores` where Open MPI bound
  // the job's ranks to a core each, so that this cluster's ranks share out their hosts' cores again.
  explicit MpiCluster(MPI_Comm comm = MPI_COMM_WORLD, bool shareCores = false) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host_);
    MPI_Comm_rank(host_, &local_);
    MPI_Comm_size(host_, &localSize_);
    sharesCores_ = comm_ == MPI_COMM_WORLD ? widenBinding() : shareCores;
    if (comm_ != MPI_COMM_WORLD && sharesCores_) shareCoresOut();
    // Dealing has a communicator of its own: its messages never meet the collectives of the main thread.
    MPI_Comm_dup(comm_, &deals_);
  }
  ~MpiCluster() override {
    if (server_.joinable()) server_.join();
    MPI_Comm_free(&deals_);
    MPI_Comm_free(&host_);
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return local_; }
  int localSize() const override { return localSize_; }
  std::uint64_t minimum(std::uint64_t value) override {
    std::uint64_t result = value;
    MPI_Allreduce(&value, &result, 1, MPI_UINT64_T, MPI_MIN, comm_);
    return result;
  }
  std::string broadcast(const std::string& text) override {
    unsigned long long length = text.size();
    MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm_);
    std::string result = rank_ == 0 ? text : std::string(length, '\0');
    MPI_Bcast(result.data(), static_cast<int>(length), MPI_CHAR, 0, comm_);
    return result;
  }
  std::vector<std::string> gather(const std::string& text) override {
    const int length = static_cast<int>(text.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0), offsets(rank_ == 0 ? size_ : 0);
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_);
    std::string all;
    if (rank_ == 0) {
      for (int r = 0; r < size_; ++r) offsets[r] = r == 0 ? 0 : offsets[r - 1] + lengths[r - 1];
      all.resize(static_cast<std::size_t>(offsets.back() + lengths.back()));
    }
    MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm_);
    std::vector<std::string> texts;
    for (int r = 0; rank_ == 0 && r < size_; ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
    return texts;
  }
  void barrier() override { MPI_Barrier(comm_); }
  double maximum(double value) override {
    double result = value;
    MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, comm_);
    return result;
  }
  // A chain from rank 0 to the last rank in chunks of 16 MiB, each rank adding its terms to what the one before sent:
  // the fold's order is fixed, and the chunks pipeline (rank r adds chunk c while rank r - 1 adds chunk c + 1), so a
  // long vector costs about one pass over it plus a chunk per rank; then the last rank's sum goes to every rank.
  void sumInOrder(const std::vector<const float*>& terms, std::size_t n, float* sum) override {
    constexpr std::size_t kChunk = std::size_t{1} << 22;
    for (std::size_t begin = 0; begin < n; begin += kChunk) {
      const std::size_t count = std::min(kChunk, n - begin);
      if (rank_ > 0) MPI_Recv(sum + begin, static_cast<int>(count), MPI_FLOAT, rank_ - 1, kSum, comm_, MPI_STATUS_IGNORE);
      foldTerms(terms, begin, count, sum + begin, rank_ > 0);
      if (rank_ + 1 < size_) MPI_Send(sum + begin, static_cast<int>(count), MPI_FLOAT, rank_ + 1, kSum, comm_);
    }
    broadcast(size_ - 1, sum, n);
  }
  void broadcast(int root, float* values, std::size_t n) override {
    constexpr std::size_t kChunk = std::size_t{1} << 28;  // MPI counts are int
    for (std::size_t begin = 0; begin < n; begin += kChunk)
      MPI_Bcast(values + begin, static_cast<int>(std::min(kChunk, n - begin)), MPI_FLOAT, root, comm_);
  }

  void deal(std::size_t count) override {
    if (server_.joinable()) server_.join();
    items_.reset(count);
    finishedElsewhere_ = 0;
    finished_ = 0;
    told_ = false;
    if (rank_ == 0 && size_ > 1) server_ = std::thread([this] { serve(); });
    barrier();  // the server listens before anyone asks (and no rank asks about an earlier deal's items)
  }
  std::optional<std::size_t> next() override {
    if (rank_ == 0) return items_.take();
    // The request says how many items this rank has finished since it last asked (rank 0's progress counts them).
    int finished = finished_.exchange(0);
    long long item = -1;
    MPI_Send(&finished, 1, MPI_INT, 0, kAsk, deals_);
    MPI_Recv(&item, 1, MPI_LONG_LONG, 0, kGive, deals_, MPI_STATUS_IGNORE);
    if (item >= 0) return static_cast<std::size_t>(item);
    // Nothing left, but this rank may still hold items (one dealt ahead, the one its device works on): from now on
    // each is reported as it is finished, and rank 0's server waits for them.
    told_ = true;
    reportFinished();
    return std::nullopt;
  }
  void finishedOne() override {
    if (rank_ == 0) return;
    ++finished_;
    if (told_) reportFinished();
  }
  std::size_t finishedElsewhere() const override { return finishedElsewhere_; }
  std::vector<int> onThisHost(int value) override {
    std::vector<int> values(static_cast<std::size_t>(localSize_));
    MPI_Allgather(&value, 1, MPI_INT, values.data(), 1, MPI_INT, host_);
    return values;
  }
  std::unique_ptr<Cluster> keep(bool works) override {
    MPI_Comm kept = MPI_COMM_NULL;
    MPI_Comm_split(comm_, works ? 0 : MPI_UNDEFINED, rank_, &kept);
    if (!works) return nullptr;
    return std::make_unique<MpiCluster>(kept, sharesCores_);
  }
  void barrierIdly() override {
    MPI_Request request;
    MPI_Ibarrier(comm_, &request);
    for (int done = 0;;) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      ::usleep(2000);  // the last rank to arrive is answered within 2 ms: nothing beside a run of seconds
    }
  }

 private:
  // Rank 0: answers every other rank's requests until each has been told that nothing is left, and hears of every item
  // it gave them finished (a request says how many since the last; kFinished messages, once told, the rest).
  void serve() {
    std::vector<std::size_t> given(static_cast<std::size_t>(size_)), reported(given.size());
    std::vector<bool> told(given.size());
    told[0] = true;
    const auto settled = [&] {
      for (std::size_t r = 0; r < given.size(); ++r)
        if (!told[r] || reported[r] < given[r]) return false;
      return true;
    };
    while (!settled()) {
      int finished = 0;
      MPI_Status status;
      MPI_Recv(&finished, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, deals_, &status);
      const auto from = static_cast<std::size_t>(status.MPI_SOURCE);
      reported[from] += static_cast<std::size_t>(finished);
      finishedElsewhere_ += static_cast<std::size_t>(finished);
      if (status.MPI_TAG != kAsk) continue;
      const std::optional<std::size_t> item = items_.take();
      const long long reply = item ? static_cast<long long>(*item) : -1;
      if (item)
        ++given[from];
      else
        told[from] = true;
      MPI_Send(&reply, 1, MPI_LONG_LONG, status.MPI_SOURCE, kGive, deals_);
    }
  }
  // A rank told that nothing is left reports what it has finished since its last message. Both threads that may call
  // it (the one told, the one finishing) take the count with exchange: each finished item is reported once.
  void reportFinished() {
    int finished = finished_.exchange(0);
    if (finished > 0) MPI_Send(&finished, 1, MPI_INT, 0, kFinished, deals_);
  }

  // Open MPI binds each rank to one core when it starts two or fewer (its default), which leaves glrecon's reading,
  // filtering and GPU-feeding threads on that core (mpirun -np 1 ran 8x slower than one process at 1024^3 on an
  // H200): a rank bound to a single core takes its share of the host's cores instead (threads made later inherit it).
  // A binding of several cores was chosen by someone and is kept. True where the rank was bound to a single core.
  bool widenBinding() {
    cpu_set_t set;
    CPU_ZERO(&set);
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (::sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1 || cores > CPU_SETSIZE) return false;
    if (cores >= 2L * localSize_) {
      const cpu_set_t share = shareOfCores(cores);
      ::sched_setaffinity(0, sizeof share, &share);
    }
    return true;
  }
  // The working ranks of a host (keep()) share out its cores again, those of the ranks standing aside included. Every
  // thread of the process is moved (MPI's own threads are running already; the rest inherit the main thread's).
  void shareCoresOut() {
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < localSize_ || cores > CPU_SETSIZE) return;
    const cpu_set_t share = shareOfCores(cores);
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
      const pid_t thread = static_cast<pid_t>(std::atoi(task.path().filename().c_str()));
      if (thread > 0) ::sched_setaffinity(thread, sizeof share, &share);
    }
  }
  // This rank's cores: [local * share, (local + 1) * share), share = cores / localSize.
  cpu_set_t shareOfCores(long cores) const {
    cpu_set_t set;
    CPU_ZERO(&set);
    const long share = cores / localSize_;
    for (long c = local_ * share; c < (local_ + 1) * share; ++c) CPU_SET(static_cast<int>(c), &set);
    return set;
  }

  MPI_Comm comm_ = MPI_COMM_WORLD;
  MPI_Comm host_ = MPI_COMM_NULL;  // this cluster's ranks on this rank's host
  int rank_ = 0, size_ = 1, local_ = 0, localSize_ = 1;
  bool sharesCores_ = false;  // Open MPI bound the job's ranks to a core each: glrecon shares out the cores
  MPI_Comm deals_ = MPI_COMM_NULL;
  Counter items_;
  std::atomic<std::size_t> finishedElsewhere_{0};
  std::atomic<int> finished_{0};
  std::atomic<bool> told_{false};  // this rank was told that nothing is left
  std::thread server_;
};
#endif

std::unique_ptr<Cluster> process;

}  // namespace

std::unique_ptr<Cluster> singleProcessCluster() { return std::make_unique<SingleProcess>(); }

std::vector<bool> ranksThatWork(const std::vector<int>& devices, int perDevice) {
  std::vector<bool> works(devices.size(), true);
  if (perDevice <= 0) return works;
  for (std::size_t r = 0; r < devices.size(); ++r)
    works[r] = std::count(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(r), devices[r]) < perDevice;
  return works;
}

bool clusterBuiltWithMpi() {
#ifdef GLRECON_HAVE_MPI
  return true;
#else
  return false;
#endif
}

const char* oneHostMessagingLayer(const char* worldSize, const char* localSize, const char* chosen) {
  if (!worldSize || !localSize || chosen || std::string_view(worldSize) != std::string_view(localSize)) return nullptr;
  return "ob1";
}

int sendLoopbackMessagesAtOnce() {
  int set = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    int fd = -1;
    const std::string name = entry.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc{}) continue;
    int type = 0;
    socklen_t length = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage peer{};
    length = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    const bool loopback =
        (peer.ss_family == AF_INET &&
         (ntohl(reinterpret_cast<const sockaddr_in&>(peer).sin_addr.s_addr) >> 24) == 127) ||
        (peer.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr));
    const int on = 1;
    if (loopback && ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0) ++set;
  }
  return set;
}

std::string sharedDeviceNotice(int localRank, int localSize, std::size_t devicesGiven, int devices, int device,
                               const std::string& backendName, bool cuda, const std::string& host) {
  if (localSize < 2 || localRank != 1 || devicesGiven > 1) return "";
  if (devices > 1)
    return "the ranks on " + host + " all use " + backendName + " device " + std::to_string(device) + " of its " +
           std::to_string(devices) + "; --gpu all gives each rank its own";
  // Measured on an H100 (docs/cluster.md, session 47): 2 and 4 ranks on its one GPU took +39% and +92% over one process
  // at 1024^3, +8% and +15% at 2048^3: each rank reads and filters its own slabs' rows and backprojects thinner slabs
  // (NVIDIA's MPS, which runs the ranks' kernels at once, took off at most a tenth of that: session 48).
  if (devices == 1 && cuda)
    return "the " + std::to_string(localSize) + " ranks on " + host + " share its one GPU (" + backendName + " device " +
           std::to_string(device) + "); ranks on one GPU take turns on it, so one process is faster: start one rank per GPU";
  return "";
}

Cluster* startCluster(int* argc, char*** argv) {
  const int ranks = launchedRanks();
  if (ranks == 0) return nullptr;
#ifdef GLRECON_HAVE_MPI
  // Debian's Open MPI otherwise first tries its "cm" layer, which probes Omni-Path's libraries (psm, psm2): 0.2 s of
  // MPI_Init on a host without that fabric (0.22 s against 0.02 s on the development machine), where a 1024^3 run takes
  // 1.6 s on an H100. Ranks across hosts keep the site's choice.
  if (const char* layer = oneHostMessagingLayer(std::getenv("OMPI_COMM_WORLD_SIZE"), std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"),
                                                std::getenv("OMPI_MCA_pml")))
    setenv("OMPI_MCA_pml", layer, 0);
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  // PMIx's link to mpirun (TCP on loopback) sends with Nagle's algorithm: MPI_Finalize's small messages then wait for
  // mpirun's delayed acknowledgement, 40 ms of its 47 ms on the development machine (strace); 5 ms once it sends at once.
  sendLoopbackMessagesAtOnce();
  // Abort, not an error code, on any MPI failure: a rank that returned from a failed call would leave the others waiting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "glrecon: error: this MPI library gives thread level %d; glrecon deals slabs from a thread of rank 0 "
                 "and needs MPI_THREAD_MULTIPLE (%d)\n", provided, MPI_THREAD_MULTIPLE);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  process = std::make_unique<MpiCluster>();
  return process.get();
#else
  (void)argc;
  (void)argv;
  if (ranks > 1)
    throw UsageError("started by mpirun with " + std::to_string(ranks) + " ranks, but this glrecon was built without MPI: each copy would "
                     "reconstruct and write the whole volume. Install libopenmpi-dev and build again (CMake finds MPI), or run one process");
  return nullptr;
#endif
}

void endCluster() {
#ifdef GLRECON_HAVE_MPI
  if (!process) return;
  process.reset();
  MPI_Finalize();
#endif
}

Cluster* currentCluster() { return process.get(); }

void abortCluster(const std::string& message, int code) {
#ifdef GLRECON_HAVE_MPI
  if (!process || process->size() == 1) return;
  std::fprintf(stderr, "glrecon: rank %d of %d (%s) stops the job: %s", process->rank(), process->size(), process->host().c_str(), message.c_str());
  if (message.empty() || message.back() != '\n') std::fputc('\n', stderr);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
#else
  (void)message;
  (void)code;
#endif
}

}  // namespace glrecon
