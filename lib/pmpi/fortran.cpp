// Fortran programs under Open MPI. Its Fortran bindings call the C library's PMPI_ functions
// directly: `mpif.h` and `use mpi` call mpi_allreduce_ (libmpi_mpifh), `use mpi_f08` calls
// mpi_allreduce_f08_, which calls ompi_allreduce_f there; both end in PMPI_Allreduce, past the
// preload's MPI_Allreduce. So the preload defines those entry points itself, under every name
// Open MPI gives them (ompi_<call>_f, mpi_<call>, mpi_<call>_, mpi_<call>__, MPI_<CALL>). Each
// converts as Open MPI's own wrapper does (handles with PMPI_<handle>_f2c, the addresses of
// MPI_IN_PLACE, MPI_BOTTOM and MPI_STATUS(ES)_IGNORE, statuses with PMPI_Status_c2f, indices
// from 1) and calls the preload's C function, which serves the call or forwards it to MPI.
// The completion calls come along: a served request completes only inside the preload's
// MPI_Wait* and MPI_Test* (requests.hpp), so Open MPI's Fortran MPI_WAIT, which calls
// PMPI_Wait, would wait for it forever. `use mpi_f08`'s MPI_Test, MPI_Testall, MPI_Testany,
// MPI_Testsome and MPI_Request_get_status call the Fortran profiling names (pmpi_test_ and so
// on) instead of ompi_<call>_f, so those are defined under those names too: a Fortran tool that
// calls them still gets MPI's behaviour for every request the preload did not serve.
//
// MPICH's Fortran bindings call the C MPI_ functions, which the preload already serves, so none
// of this is built there (but its f08 completion calls: fortran_mpich.cpp).
#include <mpi.h>

#if defined(OPEN_MPI) && OPEN_MPI
#include <dlfcn.h>
#include <mpi-ext.h>

#include <array>
#include <string>
#include <vector>

namespace {

// An address constant of Open MPI's Fortran bindings: a common block whose address the
// program passes, under each of the four names a Fortran compiler may give it.
class Sentinel {
 public:
  explicit Sentinel(const char* base) {
    const std::string b = base;
    std::string upper;
    for (char c : b) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    int i = 0;
    for (const std::string& name : {b, b + "_", b + "__", upper})
      addresses_[i++] = dlsym(RTLD_DEFAULT, name.c_str());
  }
  bool is(const void* p) const {
    if (!p) return false;
    for (const void* a : addresses_)
      if (a == p) return true;
    return false;
  }

 private:
  std::array<const void*, 4> addresses_{};
};

const Sentinel& in_place() {
  static const Sentinel s("mpi_fortran_in_place");
  return s;
}
const Sentinel& bottom() {
  static const Sentinel s("mpi_fortran_bottom");
  return s;
}
const Sentinel& status_ignore() {
  static const Sentinel s("mpi_fortran_status_ignore");
  return s;
}
const Sentinel& statuses_ignore() {
  static const Sentinel s("mpi_fortran_statuses_ignore");
  return s;
}

// A send buffer: MPI_IN_PLACE or MPI_BOTTOM as Fortran passes them, else itself.
const void* send_buffer(const void* p) {
  if (in_place().is(p)) return MPI_IN_PLACE;
  if (bottom().is(p)) return MPI_BOTTOM;
  return p;
}
void* buffer(void* p) { return bottom().is(p) ? MPI_BOTTOM : p; }

MPI_Comm comm(const MPI_Fint* c) { return PMPI_Comm_f2c(*c); }
MPI_Datatype type(const MPI_Fint* t) { return PMPI_Type_f2c(*t); }
MPI_Op op(const MPI_Fint* o) { return PMPI_Op_f2c(*o); }

void done(MPI_Fint* ierr, int rc) {
  if (ierr) *ierr = static_cast<MPI_Fint>(rc);
}

// gfortran's LOGICAL: .true. is 1 (Open MPI's OMPI_FORTRAN_VALUE_TRUE with gfortran).
MPI_Fint logical(int flag) { return flag ? 1 : 0; }

// Statuses to Fortran, unless the program passed MPI_STATUS(ES)_IGNORE.
MPI_Status* status_in(MPI_Fint* f, MPI_Status& c) {
  return status_ignore().is(f) ? MPI_STATUS_IGNORE : &c;
}
void status_out(const MPI_Status* c, MPI_Fint* f) {
  if (c != MPI_STATUS_IGNORE) PMPI_Status_c2f(c, f);
}

// Fortran's MPI_STATUS_SIZE (mpif-config.h): Open MPI's C status, in Fortran integers (its
// mpi.h does not say MPI_F_STATUS_SIZE).
constexpr int kStatusSize = static_cast<int>(sizeof(MPI_Status) / sizeof(MPI_Fint));

// A request array in C form, handed back to Fortran after the call.
struct Requests {
  Requests(int count, const MPI_Fint* f) : c(static_cast<std::size_t>(count > 0 ? count : 0)) {
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = PMPI_Request_f2c(f[i]);
  }
  void back(MPI_Fint* f) const {
    for (std::size_t i = 0; i < c.size(); ++i) f[i] = PMPI_Request_c2f(c[i]);
  }
  std::vector<MPI_Request> c;
};
struct Statuses {
  Statuses(int count, MPI_Fint* f)
      : fortran(f),
        ignored(statuses_ignore().is(f)),
        c(ignored ? 0 : static_cast<std::size_t>(count > 0 ? count : 0)) {}
  MPI_Status* data() { return ignored ? MPI_STATUSES_IGNORE : c.data(); }
  void back(int first, int n) const {
    if (ignored) return;
    for (int i = first; i < first + n; ++i)
      PMPI_Status_c2f(&c[static_cast<std::size_t>(i)], fortran + i * kStatusSize);
  }
  MPI_Fint* fortran;
  bool ignored;
  std::vector<MPI_Status> c;
};

// Waitsome and Testsome: indices from 1, each completed one's status at its place in the output.
int some(bool wait, MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
         MPI_Fint* statuses) {
  const int n = static_cast<int>(*incount);
  Requests rs(n, requests);
  Statuses ss(n, statuses);
  std::vector<int> done_at(static_cast<std::size_t>(n > 0 ? n : 0));
  int out = MPI_UNDEFINED;
  const int rc = wait ? MPI_Waitsome(n, rs.c.data(), &out, done_at.data(), ss.data())
                      : MPI_Testsome(n, rs.c.data(), &out, done_at.data(), ss.data());
  rs.back(requests);
  *outcount = static_cast<MPI_Fint>(out);
  if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && out != MPI_UNDEFINED) {
    for (int k = 0; k < out; ++k) indices[k] = static_cast<MPI_Fint>(done_at[k] + 1);
    ss.back(0, out);
  }
  return rc;
}

}  // namespace

// Aliases `impl`, an entry point defined below, under the four names a Fortran compiler may
// give a call: <prefix>_<lower>, with one and with two trailing underscores, and <PREFIX>_<UPPER>.
#define TOROID_FORTRAN_ALIAS(impl, name) \
  extern "C" decltype(impl) name __attribute__((alias(#impl), visibility("default")));
#define TOROID_FORTRAN_ALIASES(impl, prefix, PREFIX, lower, upper) \
  TOROID_FORTRAN_ALIAS(impl, prefix##_##lower)                     \
  TOROID_FORTRAN_ALIAS(impl, prefix##_##lower##_)                  \
  TOROID_FORTRAN_ALIAS(impl, prefix##_##lower##__)                 \
  TOROID_FORTRAN_ALIAS(impl, PREFIX##_##upper)
// ompi_<lower>_f under mpi_<lower>...; the same under the Fortran profiling names (the f08
// completion calls above); ompix_<lower>_f under mpix_<lower>... (the persistent extension).
#define TOROID_FORTRAN_NAMES(lower, upper) \
  TOROID_FORTRAN_ALIASES(ompi_##lower##_f, mpi, MPI, lower, upper)
#define TOROID_FORTRAN_PROFILING_NAMES(lower, upper) \
  TOROID_FORTRAN_ALIASES(ompi_##lower##_f, pmpi, PMPI, lower, upper)
#define TOROID_FORTRAN_MPIX_NAMES(lower, upper) \
  TOROID_FORTRAN_ALIASES(ompix_##lower##_f, mpix, MPIX, lower, upper)

extern "C" {

// ---- start-up: the preload's MPI_Init (the thread level, the settings compared) ----

void ompi_init_f(MPI_Fint* ierr) {
  int argc = 0;
  char** argv = nullptr;
  done(ierr, MPI_Init(&argc, &argv));
}
TOROID_FORTRAN_NAMES(init, INIT)

void ompi_init_thread_f(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  int argc = 0, level = 0;
  char** argv = nullptr;
  const int rc = MPI_Init_thread(&argc, &argv, static_cast<int>(*required), &level);
  *provided = static_cast<MPI_Fint>(level);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(init_thread, INIT_THREAD)

void ompi_query_thread_f(MPI_Fint* provided, MPI_Fint* ierr) {
  int level = 0;
  const int rc = MPI_Query_thread(&level);
  *provided = static_cast<MPI_Fint>(level);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(query_thread, QUERY_THREAD)

// ---- the collectives ----

void ompi_allreduce_f(char* sendbuf, char* recvbuf, MPI_Fint* count, MPI_Fint* datatype,
                      MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr) {
  done(ierr, MPI_Allreduce(send_buffer(sendbuf), buffer(recvbuf), static_cast<int>(*count),
                           type(datatype), op(o), comm(c)));
}
TOROID_FORTRAN_NAMES(allreduce, ALLREDUCE)

void ompi_reduce_scatter_block_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcount,
                                 MPI_Fint* datatype, MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr) {
  done(ierr,
       MPI_Reduce_scatter_block(send_buffer(sendbuf), buffer(recvbuf), static_cast<int>(*recvcount),
                                type(datatype), op(o), comm(c)));
}
TOROID_FORTRAN_NAMES(reduce_scatter_block, REDUCE_SCATTER_BLOCK)

void ompi_reduce_scatter_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcounts, MPI_Fint* datatype,
                           MPI_Fint* o, MPI_Fint* c, MPI_Fint* ierr) {
  done(ierr, MPI_Reduce_scatter(send_buffer(sendbuf), buffer(recvbuf), recvcounts, type(datatype),
                                op(o), comm(c)));
}
TOROID_FORTRAN_NAMES(reduce_scatter, REDUCE_SCATTER)

void ompi_allgather_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                      MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* ierr) {
  done(ierr, MPI_Allgather(send_buffer(sendbuf), static_cast<int>(*sendcount), type(sendtype),
                           buffer(recvbuf), static_cast<int>(*recvcount), type(recvtype), comm(c)));
}
TOROID_FORTRAN_NAMES(allgather, ALLGATHER)

void ompi_allgatherv_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                       MPI_Fint* recvcounts, MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* c,
                       MPI_Fint* ierr) {
  done(ierr, MPI_Allgatherv(send_buffer(sendbuf), static_cast<int>(*sendcount), type(sendtype),
                            buffer(recvbuf), recvcounts, displs, type(recvtype), comm(c)));
}
TOROID_FORTRAN_NAMES(allgatherv, ALLGATHERV)

void ompi_bcast_f(char* buf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* root, MPI_Fint* c,
                  MPI_Fint* ierr) {
  done(ierr, MPI_Bcast(buffer(buf), static_cast<int>(*count), type(datatype),
                       static_cast<int>(*root), comm(c)));
}
TOROID_FORTRAN_NAMES(bcast, BCAST)

void ompi_alltoall_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                     MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* ierr) {
  done(ierr, MPI_Alltoall(send_buffer(sendbuf), static_cast<int>(*sendcount), type(sendtype),
                          buffer(recvbuf), static_cast<int>(*recvcount), type(recvtype), comm(c)));
}
TOROID_FORTRAN_NAMES(alltoall, ALLTOALL)

void ompi_alltoallv_f(char* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype,
                      char* recvbuf, MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype,
                      MPI_Fint* c, MPI_Fint* ierr) {
  done(ierr, MPI_Alltoallv(send_buffer(sendbuf), sendcounts, sdispls, type(sendtype),
                           buffer(recvbuf), recvcounts, rdispls, type(recvtype), comm(c)));
}
TOROID_FORTRAN_NAMES(alltoallv, ALLTOALLV)

// ---- the non-blocking collectives: the request back in Fortran form ----

#define TOROID_RETURN_REQUEST(call)                      \
  MPI_Request r = MPI_REQUEST_NULL;                      \
  const int rc = call;                                   \
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(r); \
  done(ierr, rc)

void ompi_iallreduce_f(char* sendbuf, char* recvbuf, MPI_Fint* count, MPI_Fint* datatype,
                       MPI_Fint* o, MPI_Fint* c, MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Iallreduce(send_buffer(sendbuf), buffer(recvbuf),
                                       static_cast<int>(*count), type(datatype), op(o), comm(c),
                                       &r));
}
TOROID_FORTRAN_NAMES(iallreduce, IALLREDUCE)

void ompi_ireduce_scatter_block_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcount,
                                  MPI_Fint* datatype, MPI_Fint* o, MPI_Fint* c, MPI_Fint* request,
                                  MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Ireduce_scatter_block(send_buffer(sendbuf), buffer(recvbuf),
                                                  static_cast<int>(*recvcount), type(datatype),
                                                  op(o), comm(c), &r));
}
TOROID_FORTRAN_NAMES(ireduce_scatter_block, IREDUCE_SCATTER_BLOCK)

void ompi_ireduce_scatter_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcounts, MPI_Fint* datatype,
                            MPI_Fint* o, MPI_Fint* c, MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Ireduce_scatter(send_buffer(sendbuf), buffer(recvbuf), recvcounts,
                                            type(datatype), op(o), comm(c), &r));
}
TOROID_FORTRAN_NAMES(ireduce_scatter, IREDUCE_SCATTER)

void ompi_iallgather_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                       MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* request,
                       MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Iallgather(send_buffer(sendbuf), static_cast<int>(*sendcount),
                                       type(sendtype), buffer(recvbuf),
                                       static_cast<int>(*recvcount), type(recvtype), comm(c), &r));
}
TOROID_FORTRAN_NAMES(iallgather, IALLGATHER)

void ompi_iallgatherv_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                        MPI_Fint* recvcounts, MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* c,
                        MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Iallgatherv(send_buffer(sendbuf), static_cast<int>(*sendcount),
                                        type(sendtype), buffer(recvbuf), recvcounts, displs,
                                        type(recvtype), comm(c), &r));
}
TOROID_FORTRAN_NAMES(iallgatherv, IALLGATHERV)

void ompi_ibcast_f(char* buf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* root, MPI_Fint* c,
                   MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Ibcast(buffer(buf), static_cast<int>(*count), type(datatype),
                                   static_cast<int>(*root), comm(c), &r));
}
TOROID_FORTRAN_NAMES(ibcast, IBCAST)

void ompi_ialltoall_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                      MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* request,
                      MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Ialltoall(send_buffer(sendbuf), static_cast<int>(*sendcount),
                                      type(sendtype), buffer(recvbuf), static_cast<int>(*recvcount),
                                      type(recvtype), comm(c), &r));
}
TOROID_FORTRAN_NAMES(ialltoall, IALLTOALL)

void ompi_ialltoallv_f(char* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype,
                       char* recvbuf, MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype,
                       MPI_Fint* c, MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPI_Ialltoallv(send_buffer(sendbuf), sendcounts, sdispls, type(sendtype),
                                       buffer(recvbuf), recvcounts, rdispls, type(recvtype),
                                       comm(c), &r));
}
TOROID_FORTRAN_NAMES(ialltoallv, IALLTOALLV)

// ---- the persistent collectives (Open MPI 4.1's MPIX_ extension) ----
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ

void ompix_allreduce_init_f(char* sendbuf, char* recvbuf, MPI_Fint* count, MPI_Fint* datatype,
                            MPI_Fint* o, MPI_Fint* c, MPI_Fint* info, MPI_Fint* request,
                            MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPIX_Allreduce_init(send_buffer(sendbuf), buffer(recvbuf),
                                            static_cast<int>(*count), type(datatype), op(o),
                                            comm(c), PMPI_Info_f2c(*info), &r));
}
TOROID_FORTRAN_MPIX_NAMES(allreduce_init, ALLREDUCE_INIT)

void ompix_reduce_scatter_block_init_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcount,
                                       MPI_Fint* datatype, MPI_Fint* o, MPI_Fint* c, MPI_Fint* info,
                                       MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPIX_Reduce_scatter_block_init(send_buffer(sendbuf), buffer(recvbuf),
                                                       static_cast<int>(*recvcount), type(datatype),
                                                       op(o), comm(c), PMPI_Info_f2c(*info), &r));
}
TOROID_FORTRAN_MPIX_NAMES(reduce_scatter_block_init, REDUCE_SCATTER_BLOCK_INIT)

void ompix_reduce_scatter_init_f(char* sendbuf, char* recvbuf, MPI_Fint* recvcounts,
                                 MPI_Fint* datatype, MPI_Fint* o, MPI_Fint* c, MPI_Fint* info,
                                 MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPIX_Reduce_scatter_init(send_buffer(sendbuf), buffer(recvbuf), recvcounts,
                                                 type(datatype), op(o), comm(c),
                                                 PMPI_Info_f2c(*info), &r));
}
TOROID_FORTRAN_MPIX_NAMES(reduce_scatter_init, REDUCE_SCATTER_INIT)

void ompix_allgather_init_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                            MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* info,
                            MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPIX_Allgather_init(
      send_buffer(sendbuf), static_cast<int>(*sendcount), type(sendtype), buffer(recvbuf),
      static_cast<int>(*recvcount), type(recvtype), comm(c), PMPI_Info_f2c(*info), &r));
}
TOROID_FORTRAN_MPIX_NAMES(allgather_init, ALLGATHER_INIT)

void ompix_allgatherv_init_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                             MPI_Fint* recvcounts, MPI_Fint* displs, MPI_Fint* recvtype,
                             MPI_Fint* c, MPI_Fint* info, MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPIX_Allgatherv_init(send_buffer(sendbuf), static_cast<int>(*sendcount),
                                             type(sendtype), buffer(recvbuf), recvcounts, displs,
                                             type(recvtype), comm(c), PMPI_Info_f2c(*info), &r));
}
TOROID_FORTRAN_MPIX_NAMES(allgatherv_init, ALLGATHERV_INIT)

void ompix_alltoall_init_f(char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, char* recvbuf,
                           MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* c, MPI_Fint* info,
                           MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPIX_Alltoall_init(
      send_buffer(sendbuf), static_cast<int>(*sendcount), type(sendtype), buffer(recvbuf),
      static_cast<int>(*recvcount), type(recvtype), comm(c), PMPI_Info_f2c(*info), &r));
}
TOROID_FORTRAN_MPIX_NAMES(alltoall_init, ALLTOALL_INIT)

void ompix_bcast_init_f(char* buf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* root, MPI_Fint* c,
                        MPI_Fint* info, MPI_Fint* request, MPI_Fint* ierr) {
  TOROID_RETURN_REQUEST(MPIX_Bcast_init(buffer(buf), static_cast<int>(*count), type(datatype),
                                        static_cast<int>(*root), comm(c), PMPI_Info_f2c(*info),
                                        &r));
}
TOROID_FORTRAN_MPIX_NAMES(bcast_init, BCAST_INIT)

#endif  // OMPI_HAVE_MPI_EXT_PCOLLREQ

// ---- completion: through the preload's MPI_Wait* and MPI_Test* ----

void ompi_wait_f(MPI_Fint* request, MPI_Fint* status, MPI_Fint* ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  MPI_Status s;
  MPI_Status* sp = status_in(status, s);
  const int rc = MPI_Wait(&r, sp);
  *request = PMPI_Request_c2f(r);
  if (rc == MPI_SUCCESS) status_out(sp, status);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(wait, WAIT)

void ompi_test_f(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  MPI_Status s;
  MPI_Status* sp = status_in(status, s);
  int f = 0;
  const int rc = MPI_Test(&r, &f, sp);
  *request = PMPI_Request_c2f(r);
  *flag = logical(f);
  if (rc == MPI_SUCCESS && f) status_out(sp, status);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(test, TEST)
TOROID_FORTRAN_PROFILING_NAMES(test, TEST)

void ompi_waitall_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* statuses, MPI_Fint* ierr) {
  Requests rs(static_cast<int>(*count), requests);
  Statuses ss(static_cast<int>(*count), statuses);
  const int rc = MPI_Waitall(static_cast<int>(*count), rs.c.data(), ss.data());
  rs.back(requests);
  if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) ss.back(0, static_cast<int>(*count));
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(waitall, WAITALL)

void ompi_testall_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, MPI_Fint* statuses,
                    MPI_Fint* ierr) {
  Requests rs(static_cast<int>(*count), requests);
  Statuses ss(static_cast<int>(*count), statuses);
  int f = 0;
  const int rc = MPI_Testall(static_cast<int>(*count), rs.c.data(), &f, ss.data());
  rs.back(requests);
  *flag = logical(f);
  if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && f) ss.back(0, static_cast<int>(*count));
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(testall, TESTALL)
TOROID_FORTRAN_PROFILING_NAMES(testall, TESTALL)

void ompi_waitany_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* status,
                    MPI_Fint* ierr) {
  Requests rs(static_cast<int>(*count), requests);
  MPI_Status s;
  MPI_Status* sp = status_in(status, s);
  int i = MPI_UNDEFINED;
  const int rc = MPI_Waitany(static_cast<int>(*count), rs.c.data(), &i, sp);
  rs.back(requests);
  *index = static_cast<MPI_Fint>(i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1);
  if (rc == MPI_SUCCESS) status_out(sp, status);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(waitany, WAITANY)

void ompi_testany_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag,
                    MPI_Fint* status, MPI_Fint* ierr) {
  Requests rs(static_cast<int>(*count), requests);
  MPI_Status s;
  MPI_Status* sp = status_in(status, s);
  int i = MPI_UNDEFINED, f = 0;
  const int rc = MPI_Testany(static_cast<int>(*count), rs.c.data(), &i, &f, sp);
  rs.back(requests);
  *index = static_cast<MPI_Fint>(i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1);
  *flag = logical(f);
  if (rc == MPI_SUCCESS && f) status_out(sp, status);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(testany, TESTANY)
TOROID_FORTRAN_PROFILING_NAMES(testany, TESTANY)

void ompi_waitsome_f(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                     MPI_Fint* statuses, MPI_Fint* ierr) {
  done(ierr, some(true, incount, requests, outcount, indices, statuses));
}
TOROID_FORTRAN_NAMES(waitsome, WAITSOME)

void ompi_testsome_f(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                     MPI_Fint* statuses, MPI_Fint* ierr) {
  done(ierr, some(false, incount, requests, outcount, indices, statuses));
}
TOROID_FORTRAN_NAMES(testsome, TESTSOME)
TOROID_FORTRAN_PROFILING_NAMES(testsome, TESTSOME)

void ompi_request_get_status_f(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status,
                               MPI_Fint* ierr) {
  MPI_Status s;
  MPI_Status* sp = status_in(status, s);
  int f = 0;
  const int rc = MPI_Request_get_status(PMPI_Request_f2c(*request), &f, sp);
  *flag = logical(f);
  if (rc == MPI_SUCCESS && f) status_out(sp, status);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(request_get_status, REQUEST_GET_STATUS)
TOROID_FORTRAN_PROFILING_NAMES(request_get_status, REQUEST_GET_STATUS)

void ompi_request_free_f(MPI_Fint* request, MPI_Fint* ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  const int rc = MPI_Request_free(&r);
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(MPI_REQUEST_NULL);
  done(ierr, rc);
}
TOROID_FORTRAN_NAMES(request_free, REQUEST_FREE)

void ompi_start_f(MPI_Fint* request, MPI_Fint* ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  done(ierr, MPI_Start(&r));
}
TOROID_FORTRAN_NAMES(start, START)

void ompi_startall_f(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierr) {
  Requests rs(static_cast<int>(*count), requests);
  done(ierr, MPI_Startall(static_cast<int>(*count), rs.c.data()));
}
TOROID_FORTRAN_NAMES(startall, STARTALL)

}  // extern "C"

#endif  // OPEN_MPI
