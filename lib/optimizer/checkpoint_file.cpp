#include "optimizer/checkpoint_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <vector>

#include "kernels/crc32c.hpp"
#include "mpi_base/agreement.hpp"
#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::optimizer::checkpoint {
namespace {

// One MPI-IO call moves at most this much (counts are ints).
constexpr std::size_t kChunk = std::size_t{1} << 30;

// Makes a rename durable: the directory entry itself is flushed.
void sync_directory(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw Error(fmt::format("checkpoint: syncing directory '{}' failed on rank 0: {}", dir.string(),
                            std::strerror(err)));
  }
  ::close(fd);
}

}  // namespace

SharedFile::SharedFile(MPI_Comm comm, std::string path, Mode mode)
    : comm_(comm),
      path_(std::move(path)),
      temporary_(mode == Mode::save ? path_ + ".saving" : path_),
      mode_(mode) {
  mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  if (mode_ == Mode::save && rank_ == 0) {
    if (const char* v = std::getenv("TOROID_TEST_KILL_SAVE_AFTER")) kill_after_ = std::atoll(v);
  }
  if (mode_ == Mode::save) create_shared();
  const int amode = mode_ == Mode::save ? MPI_MODE_WRONLY : MPI_MODE_RDONLY;
  const int rc = MPI_File_open(comm_, temporary_.c_str(), amode, MPI_INFO_NULL, &file_);
  if (rc != MPI_SUCCESS) file_ = MPI_FILE_NULL, fail(rc, "MPI_File_open");
  agree();
}

// Saving: rank 0 creates the temporary first, with POSIX, so that the usual failures (no such
// directory, no permission) carry errno's words; a stale temporary from a killed save is
// removed. Then every rank must see that same file: parts written into node-local files of
// the same name would make a checkpoint with holes. Rank 0 writes a random token into it and
// every rank reads it back. (Loading: rank 0 has read the header already, and a rank that
// reads another copy fails the checksums.)
void SharedFile::create_shared() {
  std::uint64_t token = 0;
  toroid::run_agreed(comm_, [&] {
    if (rank_ != 0) return;
    ::unlink(temporary_.c_str());
    const int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
      throw InvalidArgument(
          fmt::format("checkpoint: cannot open '{}' for writing (as '{}') on "
                      "rank 0: {}",
                      path_, temporary_, std::strerror(errno)));
    std::random_device random;
    token = (std::uint64_t{random()} << 32) ^ random() ^ static_cast<std::uint64_t>(::getpid());
    const bool written = ::write(fd, &token, sizeof token) == sizeof token;
    const int err = errno;
    ::close(fd);
    if (!written)
      throw Error(fmt::format("checkpoint: writing '{}' on rank 0 failed: {}", temporary_,
                              std::strerror(err)));
  });
  mpi_check(MPI_Bcast(&token, 1, MPI_UINT64_T, 0, comm_), "MPI_Bcast");
  agreed([&] {
    std::uint64_t seen = 0;
    const int fd = ::open(temporary_.c_str(), O_RDONLY);
    const bool read = fd >= 0 && ::pread(fd, &seen, sizeof seen, 0) == sizeof seen;
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (read && seen == token) return;
    char host[256] = "?";
    ::gethostname(host, sizeof host - 1);
    throw InvalidArgument(fmt::format(
        "checkpoint: saving '{}': rank {} (host {}) {} the file rank 0 created: every rank "
        "writes its part, so the directory must be one file system that all ranks share (not a "
        "node-local one such as /tmp)",
        path_, rank_, host,
        fd < 0 ? fmt::format("cannot open ({})", std::strerror(err))
               : std::string("sees another file than")));
  });
}

SharedFile::~SharedFile() {
  close();
  if (mode_ == Mode::save && !committed_ && rank_ == 0) ::unlink(temporary_.c_str());
}

void SharedFile::close() {
  if (file_ == MPI_FILE_NULL) return;
  const int rc = MPI_File_close(&file_);
  file_ = MPI_FILE_NULL;
  if (rc != MPI_SUCCESS) fail(rc, "MPI_File_close");
}

void SharedFile::fail(int code, const char* call) {
  if (!error_.empty()) return;
  try {
    mpi_check(code, call);
  } catch (const MpiError& e) {
    error_ = e.what();  // "<call> failed on world rank R: <MPI's words>"
  }
}

void SharedFile::agree() {
  agreed([&] {});
}

// Runs f on every rank and agrees on errors (this rank's recorded one first). A failed save
// is abandoned before anyone returns: the file closed and the temporary gone.
void SharedFile::agreed(const std::function<void()>& f) {
  try {
    toroid::run_agreed(comm_, [&] {
      check_recorded();
      f();
    });
  } catch (const Error&) {
    if (mode_ == Mode::save) {
      close();
      if (rank_ == 0 && !committed_) ::unlink(temporary_.c_str());
      MPI_Barrier(comm_);
    }
    throw;
  }
}

void SharedFile::check_recorded() const {
  if (error_.empty()) return;
  if (mode_ == Mode::load)
    throw Error(fmt::format("checkpoint: loading '{}' failed: {}", path_, error_));
  throw Error(
      fmt::format("checkpoint: saving '{}' failed, the previous file is untouched: "
                  "writing '{}': {}",
                  path_, temporary_, error_));
}

void SharedFile::move(std::span<const Extent> extents, bool writing) {
  std::vector<Extent> pieces;
  for (const Extent& e : extents)
    for (std::size_t done = 0; done < e.bytes; done += kChunk)
      pieces.push_back({e.at + done, e.data + done, std::min(kChunk, e.bytes - done)});
  std::sort(pieces.begin(), pieces.end(),
            [](const Extent& a, const Extent& b) { return a.at < b.at; });
  for (const Extent& e : pieces)
    if (!transfer(e, writing)) return;
}

// One call for at most kChunk bytes. Independent calls, each rank at its own pace: the runs
// are large and contiguous, so a collective (two-phase) call has nothing to merge, and in Open
// MPI 4.1 (OMPIO) a collective write whose aggregator fails (a full disk) leaves the other
// ranks waiting inside it forever (seen at 3 ranks); failures are agreed afterwards instead.
bool SharedFile::transfer(const Extent& e, bool writing) {
  if (!error_.empty()) return false;
  MPI_Status status;
  const auto at = static_cast<MPI_Offset>(e.at);
  const int count = static_cast<int>(e.bytes);
  const int rc = writing ? MPI_File_write_at(file_, at, e.data, count, MPI_BYTE, &status)
                         : MPI_File_read_at(file_, at, e.data, count, MPI_BYTE, &status);
  if (rc != MPI_SUCCESS) {
    fail(rc, writing ? "MPI_File_write_at" : "MPI_File_read_at");
    return false;
  }
  int moved = 0;
  MPI_Get_count(&status, MPI_BYTE, &moved);
  if (moved != count)
    error_ = fmt::format("{} on rank {}: {} ({} {} of {} bytes at offset {})",
                         writing ? "MPI_File_write_at" : "MPI_File_read_at", rank_,
                         writing ? short_write_cause(e, moved) : "the file is shorter",
                         writing ? "wrote" : "read", moved, count, e.at);
  written_ += writing ? moved : 0;
  if (kill_after_ >= 0 && written_ >= kill_after_) std::raise(SIGKILL);
  return error_.empty();
}

std::vector<std::uint32_t> SharedFile::checksums(std::span<const Extent> extents) {
  constexpr std::size_t kBuffer = std::size_t{8} << 20;  // stays in cache, never page-faults
  std::vector<char> buffer(kBuffer);
  std::vector<std::uint32_t> crcs(extents.size(), 0);
  for (std::size_t i = 0; i < extents.size(); ++i)
    for (std::size_t done = 0; done < extents[i].bytes; done += kBuffer) {
      const Extent piece{extents[i].at + done, buffer.data(),
                         std::min(kBuffer, extents[i].bytes - done)};
      if (!transfer(piece, false)) break;
      crcs[i] = kernels::crc32c(crcs[i], buffer.data(), piece.bytes);
    }
  agree();
  return crcs;
}

// MPI-IO reports a short write without errno: the rest written once more, with POSIX, names
// the cause (no space, quota, I/O error).
std::string SharedFile::short_write_cause(const Extent& e, int moved) const {
  const int fd = ::open(temporary_.c_str(), O_WRONLY);
  if (fd < 0) return std::strerror(errno);
  const std::size_t rest = e.bytes - static_cast<std::size_t>(moved);
  const ssize_t n = ::pwrite(fd, e.data + moved, rest, static_cast<off_t>(e.at) + moved);
  const int err = errno;
  ::close(fd);
  return n < 0 ? std::strerror(err) : "a short write";
}

void SharedFile::write(std::span<const Extent> extents) {
  move(extents, true);
  agree();
}

void SharedFile::read(std::span<const Extent> extents) {
  move(extents, false);
  agree();
}

void SharedFile::commit() {
  const int rc = MPI_File_sync(file_);
  if (rc != MPI_SUCCESS) fail(rc, "MPI_File_sync");
  close();
  agree();
  agreed([&] {
    if (rank_ != 0) return;
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
      throw Error(fmt::format("checkpoint: renaming '{}' to '{}' failed on rank 0: {}", temporary_,
                              path_, std::strerror(errno)));
    committed_ = true;
    sync_directory(path_);
  });
  committed_ = true;
}

}  // namespace toroid::optimizer::checkpoint
