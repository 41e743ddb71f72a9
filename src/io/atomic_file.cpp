#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <utility>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "posix_file.h"

namespace glrecon {
namespace fs = std::filesystem;

namespace {

// Live temporaries, this run's staged outputs and the directories it made, for the signal handler: fixed slots of
// plain char arrays, so the handler needs no allocation and no lock (both unsafe in a handler). A slot's path is
// written before its flag is set (release) and the handler reads the flag first (acquire). 4096 slots: a view --method
// run tracks three snapshots per iteration; the 16 MiB are untouched memory until a slot is used.
constexpr std::size_t kSlots = 4096, kPathBytes = 4096;

// A file by device and inode (ino 0: none). ino is stored last (release) and read first (acquire).
struct Identity {
  std::atomic<std::uint64_t> dev{0}, ino{0};
};

struct Slot {
  std::atomic<bool> used{false};   // claimed by a thread
  std::atomic<bool> ready{false};  // path complete: the handler may look at it
  // The files (or directory) this run put at the path, the latest two: the next one is recorded before the rename
  // that lands it there, so whichever of them the name holds is known as this run's. The handler removes the path only
  // while it holds one of them, never a file another process put there.
  std::array<Identity, 2> owned;
  std::atomic<unsigned> latest{0};
  // Where no identity is recorded yet: a RunOutputs path is removed only if an empty directory (one made without
  // recording it); an AtomicOutput's temporary, between its O_EXCL creation under a random name and the fstat that
  // records it, is this run's file.
  enum class Unrecorded : unsigned char { EmptyDirectory, Ours } unrecorded = Unrecorded::EmptyDirectory;
  char path[kPathBytes];
};
std::array<Slot, kSlots> slots;
std::atomic<bool> handlersInstalled{false};
// Held by every writer of a slot (claiming, recording an identity, releasing) and by recordOwner's reading of the paths,
// so a slot is not reclaimed under a comparison. Never taken by the handler.
std::mutex slotMutex;

// Absolute and lexically normal: a target and the RunOutputs entry for it match however each was spelt, and the
// handler's unlink does not depend on the working directory.
std::string normalPath(const std::string& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  return (error ? fs::path(path) : absolute).lexically_normal().string();
}

enum class Owner { Ours, NotOurs, Unknown, Missing };

// What the slot's path holds now, against what this run recorded there. Async-signal-safe (lstat only).
Owner ownerOf(const Slot& slot, struct stat& s) {
  if (::lstat(slot.path, &s) != 0) return Owner::Missing;
  bool any = false;
  for (const Identity& id : slot.owned) {
    const std::uint64_t ino = id.ino.load(std::memory_order_acquire);
    if (ino == 0) continue;
    any = true;
    if (ino == static_cast<std::uint64_t>(s.st_ino) && id.dev.load(std::memory_order_relaxed) == static_cast<std::uint64_t>(s.st_dev))
      return Owner::Ours;
  }
  if (any) return Owner::NotOurs;
  return slot.unrecorded == Slot::Unrecorded::Ours ? Owner::Ours : Owner::Unknown;
}

// With slotMutex held.
void recordInSlot(Slot& slot, const struct stat& s) {
  for (const Identity& id : slot.owned)
    if (id.ino.load(std::memory_order_relaxed) == static_cast<std::uint64_t>(s.st_ino) &&
        id.dev.load(std::memory_order_relaxed) == static_cast<std::uint64_t>(s.st_dev))
      return;
  const unsigned next = 1 - slot.latest.load(std::memory_order_relaxed);  // replace the older one
  Identity& id = slot.owned[next];
  id.ino.store(0, std::memory_order_release);
  id.dev.store(static_cast<std::uint64_t>(s.st_dev), std::memory_order_relaxed);
  id.ino.store(static_cast<std::uint64_t>(s.st_ino), std::memory_order_release);
  slot.latest.store(next, std::memory_order_relaxed);
}

// The file `s` is this run's under the name `path` (about to be renamed there, or made there): every slot registered
// for that name records it.
void recordOwner(const std::string& path, const struct stat& s) {
  const std::string normal = normalPath(path);
  std::lock_guard lock(slotMutex);
  for (Slot& slot : slots)
    if (slot.ready.load(std::memory_order_acquire) && normal == slot.path) recordInSlot(slot, s);
}

int claimSlot(const std::string& path, Slot::Unrecorded unrecorded) {
  const std::string normal = normalPath(path);
  if (normal.size() >= kPathBytes) return -1;
  std::lock_guard lock(slotMutex);
  for (std::size_t i = 0; i < kSlots; ++i) {
    Slot& slot = slots[i];
    bool expected = false;
    if (!slot.used.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) continue;
    std::memcpy(slot.path, normal.c_str(), normal.size() + 1);
    for (Identity& id : slot.owned) id.ino.store(0, std::memory_order_relaxed);
    slot.unrecorded = unrecorded;
    slot.ready.store(true, std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1;  // more than kSlots live outputs: that path is still removed by its owner, only not on a signal
}

void removeAllAndExit(int signal) {
  struct stat s {};
  // Files first, only where the name still holds what this run put there: a file another process wrote at an output's
  // name while the run worked is that process's.
  for (Slot& slot : slots)
    if (slot.ready.load(std::memory_order_acquire) && ownerOf(slot, s) == Owner::Ours && !S_ISDIR(s.st_mode)) ::unlink(slot.path);
  // Then directories this run made (empty once their files are gone; rmdir leaves any other one), innermost first: a
  // pass removes the deepest, so repeat while one goes. A RunOutputs directory made without recording it (the caller
  // used create_directories after track) is removed only when empty, like any.
  for (bool removed = true; removed;) {
    removed = false;
    for (Slot& slot : slots) {
      if (!slot.ready.load(std::memory_order_acquire)) continue;
      const Owner owner = ownerOf(slot, s);
      if ((owner == Owner::Ours || owner == Owner::Unknown) && S_ISDIR(s.st_mode) &&
          ::rmdir(slot.path) == 0)
        removed = true;
    }
  }
  static const char message[] = "glrecon: interrupted; removed this run's temporary and partial output files\n";
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message, sizeof message - 1);
  // The shell convention for a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM, 141 for SIGPIPE).
  ::_exit(128 + signal);
}

}  // namespace

int registerCleanupPath(const std::string& path) { return claimSlot(path, Slot::Unrecorded::EmptyDirectory); }

int registerSharedTemporary(const std::string& path, int fd) {
  struct stat s {};
  if (::fstat(fd, &s) != 0) return -1;
  const int slot = claimSlot(path, Slot::Unrecorded::EmptyDirectory);
  if (slot < 0) return -1;
  std::lock_guard lock(slotMutex);
  recordInSlot(slots[slot], s);
  return slot;
}

void removeRegisteredPath(int slot) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= kSlots) return;
  struct stat s {};
  if (ownerOf(slots[slot], s) == Owner::Ours && !S_ISDIR(s.st_mode)) ::unlink(slots[slot].path);
  unregisterCleanupPath(slot);
}

void unregisterCleanupPath(int slot) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= kSlots) return;
  std::lock_guard lock(slotMutex);
  slots[slot].ready.store(false, std::memory_order_release);
  slots[slot].used.store(false, std::memory_order_release);
}

void installCleanupSignalHandlers() {
  if (handlersInstalled.exchange(true)) return;
  struct sigaction action {};
  action.sa_handler = removeAllAndExit;
  sigemptyset(&action.sa_mask);
  // Ctrl-C, kill, a closed terminal, Ctrl-\, the user signals and a closed pipe on stderr (`glrecon ... 2>&1 | head`)
  // all end the run: each removes its files. While one signal cleans up, the others wait: the handler runs once.
  const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE};
  for (int s : signals) sigaddset(&action.sa_mask, s);
  for (int s : signals) {
    // A signal the caller ignored (nohup, `trap "" INT`, a background job's SIGINT) stays ignored: it asked for that.
    struct sigaction old {};
    if (sigaction(s, nullptr, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
    sigaction(s, &action, nullptr);
  }
}

void refuseToOverwrite(const std::string& path, bool overwrite) {
  std::error_code error;
  const fs::file_status status = fs::symlink_status(path, error);
  if (!fs::exists(status)) return;
  if (fs::is_directory(status))
    throwInputError(path, "output", "a file name (not a directory)", "an existing directory");
  if (!overwrite)
    throwInputError(path, "output", "a path that does not exist yet (pass " + field("overwrite") + " to replace it)", "an existing file");
}

void requireWritableDirectory(const std::string& directory, const std::string& field) {
  const std::string dir = directory.empty() ? "." : directory;
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0)
    throwInputError(dir, field, "an existing directory", errno == ENOENT ? "no such directory" : std::strerror(errno));
  if (!S_ISDIR(info.st_mode)) throwInputError(dir, field, "a directory", "not a directory");
  // access() reports EROFS for a read-only file system and EACCES for permissions: both told apart.
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throwInputError(dir, field, "a writable directory", std::strerror(errno));
}

void checkOutputFile(const std::string& path, const std::vector<std::string>& extensions, bool overwrite,
                     const std::string& field) {
  const fs::path target(path);
  if (!extensions.empty()) {
    std::string extension = target.extension().string();
    for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool known = false;
    std::string list;
    for (const std::string& e : extensions) {
      known = known || e == extension;
      list += (list.empty() ? "" : " or ") + e;
    }
    if (!known)
      throwInputError(path, field, "a file name ending in " + list,
                      target.extension().empty() ? "no extension" : "'" + target.extension().string() + "'");
  }
  if (target.filename().empty() || target.filename() == "." || target.filename() == "..")
    throwInputError(path, field, "a file name", "a directory name");
  refuseToOverwrite(path, overwrite);
  requireWritableDirectory(target.has_parent_path() ? target.parent_path().string() : ".", field + " directory");
}

void checkOutputDirectory(const std::string& directory, const std::string& field) {
  // The directory need not exist yet (it is created): its nearest existing ancestor must be writable.
  fs::path p = fs::absolute(directory);
  std::error_code error;
  while (!fs::exists(fs::symlink_status(p, error)) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  if (fs::absolute(directory) != p && !fs::is_directory(p))
    throwInputError(directory, field, "a directory path", "'" + p.string() + "' is not a directory");
  requireWritableDirectory(p.string(), field);
}

int openEmptied(const std::string& file, int flags) {
  const int fd = ::open(file.c_str(), flags | O_CREAT, 0644);
  if (fd < 0) return -1;
  struct stat info {};
  if (::fstat(fd, &info) != 0 || (info.st_size > 0 && ::ftruncate(fd, 0) != 0)) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

void writeFileBytes(const std::string& target, const std::string& file, const void* data, std::size_t size,
                    const void* more, std::size_t moreSize) {
  // POSIX calls rather than a stream: errno tells the user why (ENOSPC, EROFS, EACCES, EDQUOT...).
  const int fd = openEmptied(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) throwInputError(target, "output", "a writable file", std::strerror(errno));
  const auto fail = [&](int error) {
    ::close(fd);
    throwInputError(target, "output", "a writable file with enough space", std::strerror(error));
  };
  for (const auto& [pointer, bytes] : {std::pair{data, size}, std::pair{more, moreSize}}) {
    const char* p = static_cast<const char*>(pointer);
    std::size_t left = bytes;
    while (left > 0) {
      const ssize_t written = ::write(fd, p, left);
      if (written < 0) {
        if (errno == EINTR) continue;
        fail(errno);
      }
      p += written;
      left -= static_cast<std::size_t>(written);
    }
  }
  if (::close(fd) != 0) throwInputError(target, "output", "a writable file with enough space", std::strerror(errno));
}

namespace {

// The files an AtomicOutput found at its target when it came to publish (device and inode): another process put them
// there while the run worked, so a run that then fails removes its outputs but not these.
std::mutex foreignMutex;
std::set<std::pair<dev_t, ino_t>> foreign;

void noteForeign(const std::string& path) {
  struct stat s {};
  if (::lstat(path.c_str(), &s) != 0) return;
  std::lock_guard lock(foreignMutex);
  foreign.insert({s.st_dev, s.st_ino});
}

bool isForeign(const std::string& path) {
  struct stat s {};
  if (::lstat(path.c_str(), &s) != 0) return false;
  std::lock_guard lock(foreignMutex);
  return foreign.count({s.st_dev, s.st_ino}) > 0;
}

}  // namespace

void RunOutputs::track(const std::string& path) {
  std::error_code error;
  if (fs::exists(fs::symlink_status(path, error))) return;
  for (const Created& c : created_)
    if (c.path == path) return;
  created_.push_back({path, registerCleanupPath(path)});
}

void RunOutputs::createDirectories(const std::string& directory) {
  // Each level that is missing, outermost first: tracked, made, and recorded as this run's, so that a signal removes
  // what this run made (and, when emptied, only that).
  std::vector<fs::path> missing;
  fs::path p = fs::path(normalPath(directory));
  if (!p.has_filename()) p = p.parent_path();  // "snaps/"
  std::error_code error;
  for (; !p.empty() && !fs::exists(fs::symlink_status(p, error)); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    track(it->string());
    if (::mkdir(it->c_str(), 0777) != 0) {
      const int error = errno;
      unregisterCleanupPath(created_.back().slot);  // not made by this run: neither the destructor's nor the handler's
      created_.pop_back();
      if (error == EEXIST) continue;  // made meanwhile by another process
      throwInputError(directory, "output directory", "a directory that can be made", std::strerror(error));
    }
    struct stat s {};
    if (::lstat(it->c_str(), &s) == 0) recordOwner(it->string(), s);
  }
  if (!fs::is_directory(directory, error)) throwInputError(directory, "output directory", "a directory", "not a directory");
}

void RunOutputs::keep() {
  kept_ = true;
  for (const Created& c : created_) unregisterCleanupPath(c.slot);
}

RunOutputs::~RunOutputs() {
  if (kept_) return;
  // Newest first: files before the directory created for them.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    const Created& c = *it;
    std::error_code ignored;
    // Where the run recorded what it put at the name, as the signal handler does: only that. Otherwise (a file written
    // without AtomicOutput, a directory made by the caller) whatever is there, unless an AtomicOutput found it there
    // when it came to publish.
    struct stat s {};
    const Owner owner = c.slot >= 0 ? ownerOf(slots[c.slot], s) : Owner::Unknown;
    if (owner == Owner::Ours || (owner == Owner::Unknown && !isForeign(c.path))) fs::remove(c.path, ignored);
    unregisterCleanupPath(c.slot);
  }
}

AtomicOutput::AtomicOutput(std::string target, bool overwrite) : overwrite_(overwrite), target_(std::move(target)) {
  refuseToOverwrite(target_, overwrite);
  const fs::path t(target_);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  requireWritableDirectory(dir.string(), "output directory of " + target_);
  std::random_device rd;
  temporary_ = (dir / ("." + t.filename().string() + ".tmp-" + std::to_string(rd()))).string();
  // Made here (the writers open it again, truncating: the same inode), so that the signal handler knows this file by
  // its identity and removes it, and nothing else that might come to have the name. Registered first: a signal while
  // it is made finds the slot (the name is this run's until the identity is recorded).
  slot_ = claimSlot(temporary_, Slot::Unrecorded::Ours);
  const int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int error = errno;
    unregisterCleanupPath(slot_);
    throwInputError(target_, "output", "a writable file", std::strerror(error));
  }
  struct stat s {};
  if (slot_ >= 0 && ::fstat(fd, &s) == 0) {
    std::lock_guard lock(slotMutex);
    recordInSlot(slots[slot_], s);
  }
  ::close(fd);
}

AtomicOutput::~AtomicOutput() {
  // Not committed: the unfinished output; committed over an earlier file: that file (swapped out to the temporary name).
  if (!committed_ || replacedKept_) {
    std::error_code ignored;
    fs::remove(temporary_, ignored);
  }
  unregisterCleanupPath(slot_);
}

namespace {

// Publishes `from` as `to` unless `to` exists, atomically: renameat2's RENAME_NOREPLACE, or where the file system lacks
// it, a hard link (which fails on an existing name too) and an unlink. False where `to` exists.
bool renameWithoutReplacing(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno == EEXIST) return false;
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    throwInputError(to, "output", "a writable location", std::strerror(errno));
  if (::link(from.c_str(), to.c_str()) == 0) {
    ::unlink(from.c_str());
    return true;
  }
  if (errno == EEXIST) return false;
  throwInputError(to, "output", "a writable location (a file system with RENAME_NOREPLACE or hard links)", std::strerror(errno));
}

}  // namespace

void AtomicOutput::commit() {
  // The file about to take the target's name is this run's there (a RunOutputs entry, or the staged name of an outer
  // AtomicOutput), recorded before the rename so that the name is never this run's file unrecorded.
  struct stat mine {};
  if (::lstat(temporary_.c_str(), &mine) == 0) recordOwner(target_, mine);
  if (!overwrite_) {
    if (!renameWithoutReplacing(temporary_, target_)) {
      noteForeign(target_);
      throwInputError(target_, "output", "a path that does not exist yet (pass " + field("overwrite") + " to replace it)",
                      "a file that appeared there while the run worked (kept as it is)");
    }
    committed_ = true;
    unregisterCleanupPath(slot_);
    slot_ = -1;
    return;
  }
  // Over an existing file, an atomic exchange: the new file takes the name at once and the old one, now under the
  // temporary name, is deleted with this object (freeing half a gigabyte of page cache takes tens of milliseconds the
  // output need not wait for). Where there is no file to exchange with, or the file system cannot, a rename. The file
  // replaced is recorded under the temporary name first, so a signal after the exchange removes it as before.
  struct stat replaced {};
  if (slot_ >= 0 && ::lstat(target_.c_str(), &replaced) == 0) {
    std::lock_guard lock(slotMutex);
    recordInSlot(slots[slot_], replaced);
  }
  if (::renameat2(AT_FDCWD, temporary_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = replacedKept_ = true;
    return;  // the temporary name, now the old file's, stays registered for removal
  }
  std::error_code error;
  fs::rename(temporary_, target_, error);
  if (error) throwInputError(target_, "output", "a writable location", error.message());
  committed_ = true;
  unregisterCleanupPath(slot_);
  slot_ = -1;
}

void AtomicOutput::commitPair(AtomicOutput& data, AtomicOutput& header) {
  data.commit();
  try {
    header.commit();
  } catch (...) {
    data.retract();  // no .raw without its .mhd
    throw;
  }
}

void AtomicOutput::retract() {
  if (!committed_) return;
  std::error_code ignored;
  if (replacedKept_ && ::renameat2(AT_FDCWD, temporary_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove(temporary_, ignored);  // now the retracted file; the replaced one is back under its name
    replacedKept_ = false;
  } else {
    fs::remove(target_, ignored);
  }
}

}  // namespace glrecon
