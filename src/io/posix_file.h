#pragma once
// Opening an output's temporary file for writing. Internal to src/io.
#include <string>

namespace glrecon {

/// `file` opened with `flags` (O_WRONLY or O_RDWR, O_CLOEXEC), made where missing and emptied where it holds bytes; -1
/// and errno on failure. A file that is empty already (an AtomicOutput's temporary, made with O_EXCL) is not
/// truncated: on ext4 a truncate to zero, even of an empty file, makes its close() write back every page written
/// since (auto_da_alloc, meant for rewrites in place): 0.57-0.93 s for 2 GiB on a 2-core VM's disk, 1.9 s of an
/// MPI rank's 4 GiB on an H200 host, where a file not truncated closes at once and is written back later, as any.
int openEmptied(const std::string& file, int flags);

}  // namespace glrecon
