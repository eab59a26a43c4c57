#include "exec/shm_segment.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "toroid/error.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::exec {
namespace {

constexpr int kNameBytes = 64;

// A name no other segment of this or another job uses: pid, a per-process count and a random
// part (pids repeat across the hosts of one /dev/shm, e.g. containers).
std::string fresh_name() {
  static std::atomic<unsigned> count{0};
  static thread_local std::mt19937_64 random{std::random_device{}()};
  return fmt::format("/toroid-{}-{}-{:016x}", static_cast<long>(getpid()), count++, random());
}

// shm_open(O_CREAT|O_EXCL) of a fresh name, sized to `bytes` (every page reserved with
// `reserve`); returns 0 or errno.
int create(std::size_t bytes, bool reserve, std::string& name, int& fd) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    name = fresh_name();
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) break;
    if (errno != EEXIST) return errno;
  }
  if (fd < 0) return EEXIST;
  const int e = reserve ? posix_fallocate(fd, 0, static_cast<off_t>(bytes))
                : ftruncate(fd, static_cast<off_t>(bytes)) != 0 ? errno
                                                                : 0;
  if (e != 0) {
    close(fd);
    fd = -1;
    shm_unlink(name.c_str());
    return e;
  }
  return 0;
}

// Maps the open file `fd` (or opens `name` first when fd < 0); returns 0 or errno. `populate`:
// fill this rank's page tables now (the pages exist, reserved): otherwise the first touch of
// every page of a peer's part faults, in the middle of a collective.
int map(const char* name, int fd, std::size_t bytes, bool populate, std::byte*& data) {
  if (fd < 0) fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) return errno;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0),
                 fd, 0);
  const int e = p == MAP_FAILED ? errno : 0;
  close(fd);  // the mapping keeps the file
  if (e == 0) data = static_cast<std::byte*>(p);
  return e;
}

}  // namespace

std::size_t page_rounded(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

SharedSegment::SharedSegment(MPI_Comm node, std::size_t bytes, Pages pages) : bytes_(bytes) {
  int local = 0;
  mpi_check(MPI_Comm_rank(node, &local), "MPI_Comm_rank");
  std::string name;
  int fd = -1;
  int created = local == 0 ? create(bytes, pages == Pages::reserved, name, fd) : 0;
  char announced[kNameBytes] = {};
  std::snprintf(announced, sizeof announced, "%s", name.c_str());
  mpi_check(MPI_Bcast(&created, 1, MPI_INT, 0, node), "MPI_Bcast");
  if (created != 0)
    throw Error(fmt::format(
        "shared-memory segment of {} bytes: shm_open or {} in {} failed on the node's first "
        "rank: {}",
        bytes, pages == Pages::reserved ? "posix_fallocate" : "ftruncate", kDir,
        std::strerror(created)));
  mpi_check(MPI_Bcast(announced, kNameBytes, MPI_CHAR, 0, node), "MPI_Bcast");

  // Everyone maps, then the node agrees: the file is unlinked only once every rank has it.
  struct {
    int error;
    int rank;
  } mine{map(announced, fd, bytes, pages == Pages::reserved, data_), local}, worst{0, 0};
  const int rc = MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, node);
  if (local == 0) shm_unlink(announced);
  mpi_check(rc, "MPI_Allreduce");
  if (worst.error != 0) {
    if (data_) munmap(data_, bytes_);
    data_ = nullptr;
    throw Error(fmt::format(
        "shared-memory segment of {} bytes ({}{}): mapping failed on the node's rank {}: {}", bytes,
        kDir, announced, worst.rank, std::strerror(worst.error)));
  }
}

SharedSegment::~SharedSegment() {
  if (data_) munmap(data_, bytes_);
}

}  // namespace toroid::exec
