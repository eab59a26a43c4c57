// A checkpoint file that every rank of a communicator writes (or reads) its own parts of, with
// MPI-IO, and the replace that makes a save all or nothing:
//
//   create    rank 0 removes a stale `path.saving` and creates it; every rank checks that it
//             sees that file (a shared file system) and opens it (MPI_File_open)
//   write     each rank its runs at their offsets (MPI_File_write_at)
//   commit    MPI_File_sync (fsync), close, rank 0 renames `path.saving` over `path` and
//             fsyncs the directory
//
// Until the rename, `path` is the previous checkpoint, untouched: a crash, a kill or a full
// disk leaves it loadable. A failed save removes the temporary; a killed one leaves it, and the
// next save replaces it. Every failure is an error on every rank, naming the file, the rank
// that failed and the cause.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace toroid::optimizer::checkpoint {

// A run of bytes at offset `at` of the file, at `data` in memory.
struct Extent {
  std::size_t at = 0;
  char* data = nullptr;
  std::size_t bytes = 0;
};

class SharedFile {
 public:
  enum class Mode { save, load };
  // Collective. Opens `path` for loading, or its temporary for saving.
  SharedFile(MPI_Comm comm, std::string path, Mode mode);
  // Collective. Closes the file; a save that was not committed removes its temporary.
  ~SharedFile();
  SharedFile(const SharedFile&) = delete;
  SharedFile& operator=(const SharedFile&) = delete;

  // Collective: each rank moves its own extents (any number, any order); then every rank
  // throws if any rank failed.
  void write(std::span<const Extent> extents);
  void read(std::span<const Extent> extents);
  // Collective: the CRC-32 of each extent's bytes in the file, read through a small buffer
  // (the extents' memory is not touched).
  std::vector<std::uint32_t> checksums(std::span<const Extent> extents);
  // Collective: makes the saved file durable and puts it in place of `path`.
  void commit();

  const std::string& temporary() const { return temporary_; }

 private:
  void create_shared();
  void move(std::span<const Extent> extents, bool writing);
  bool transfer(const Extent& e, bool writing);  // false once this rank has failed
  void fail(int code, const char* call);         // records this rank's first failure
  void agree();                                  // every rank throws if any rank failed
  void agreed(const std::function<void()>& f);
  void check_recorded() const;
  std::string short_write_cause(const Extent& e, int moved) const;
  void close();

  MPI_Comm comm_;
  std::string path_, temporary_;
  Mode mode_;
  int rank_ = 0;
  MPI_File file_ = MPI_FILE_NULL;
  bool committed_ = false;
  std::string error_;  // this rank's first failure
  // Tests only (TOROID_TEST_KILL_SAVE_AFTER, rank 0): SIGKILL after this many bytes written.
  long long kill_after_ = -1, written_ = 0;
};

}  // namespace toroid::optimizer::checkpoint
