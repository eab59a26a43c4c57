// Fortran programs under MPICH. Its `mpif.h` and `use mpi` bindings call the C MPI_ functions,
// which the preload serves as they are, and so do `use mpi_f08`'s collectives. But its f08
// start-up and completion calls (MPI_Init, MPI_Init_thread, MPI_Query_thread, MPI_Wait*,
// MPI_Test*, MPI_Request_get_status, MPI_Request_free, MPI_Start, MPI_Startall) call PMPI_
// directly: a served request completes only inside the preload's MPI_Wait* and MPI_Test*
// (requests.hpp), so MPICH's f08 MPI_Wait would wait for it forever. The preload defines those
// f08 entry points (mpi_<call>_f08_) itself and calls its C functions.
//
// The f08 arguments, as MPICH's own wrappers take them: type(MPI_Request) is its integer handle,
// which MPICH's C handle equals; type(MPI_Status) has the C status's layout (MPI_F08_status);
// MPI_STATUS(ES)_IGNORE are the objects MPI_F08_STATUS(ES)_IGNORE point to; LOGICAL .true. is 1
// (gfortran); an absent optional `ierror` is a null pointer. Indices are as this MPICH's own f08
// MPI_Waitany, MPI_Testany, MPI_Waitsome and MPI_Testsome give them, so that a program sees the
// same with the preload as without: C's (from 0) before 4.1 (an MPICH bug, pmodels/mpich#6270),
// MPI's (from 1) from 4.1 on, where it was fixed.
//
// Open MPI's bindings are another matter: fortran.cpp.
#include <mpi.h>

#if defined(MPICH_VERSION)

namespace {

static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status));
static_assert(sizeof(MPI_Request) == sizeof(MPI_Fint));

void done(MPI_Fint* ierror, int rc) {
  if (ierror) *ierror = static_cast<MPI_Fint>(rc);
}

MPI_Status* status_of(MPI_F08_status* s) {
  return s == MPI_F08_STATUS_IGNORE ? MPI_STATUS_IGNORE : reinterpret_cast<MPI_Status*>(s);
}
MPI_Status* statuses_of(MPI_F08_status* s) {
  return s == MPI_F08_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : reinterpret_cast<MPI_Status*>(s);
}
MPI_Request* requests_of(MPI_Fint* r) { return reinterpret_cast<MPI_Request*>(r); }

// C's index as this MPICH's own f08 binding hands it back (above).
constexpr int kIndexBase = MPICH_NUMVERSION >= 40100000 ? 1 : 0;
MPI_Fint index_of(int c) { return static_cast<MPI_Fint>(c == MPI_UNDEFINED ? c : c + kIndexBase); }

// MPI_Waitsome or MPI_Testsome (`call`, the preload's), indices as above.
int some(int (*call)(int, MPI_Request[], int*, int[], MPI_Status[]), MPI_Fint* incount,
         MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, MPI_F08_status* statuses) {
  int out = MPI_UNDEFINED;
  const int rc =
      call(static_cast<int>(*incount), requests_of(requests), &out, indices, statuses_of(statuses));
  *outcount = static_cast<MPI_Fint>(out);
  for (int k = 0; out != MPI_UNDEFINED && k < out; ++k) indices[k] = index_of(indices[k]);
  return rc;
}

}  // namespace

extern "C" {

void mpi_init_f08_(MPI_Fint* ierror) { done(ierror, MPI_Init(nullptr, nullptr)); }

void mpi_init_thread_f08_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierror) {
  int level = 0;
  const int rc = MPI_Init_thread(nullptr, nullptr, static_cast<int>(*required), &level);
  *provided = static_cast<MPI_Fint>(level);
  done(ierror, rc);
}

void mpi_query_thread_f08_(MPI_Fint* provided, MPI_Fint* ierror) {
  int level = 0;
  const int rc = MPI_Query_thread(&level);
  *provided = static_cast<MPI_Fint>(level);
  done(ierror, rc);
}

void mpi_wait_f08_(MPI_Fint* request, MPI_F08_status* status, MPI_Fint* ierror) {
  done(ierror, MPI_Wait(requests_of(request), status_of(status)));
}

void mpi_waitall_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_F08_status* statuses,
                      MPI_Fint* ierror) {
  done(ierror, MPI_Waitall(static_cast<int>(*count), requests_of(requests), statuses_of(statuses)));
}

void mpi_waitany_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_F08_status* status,
                      MPI_Fint* ierror) {
  int i = MPI_UNDEFINED;
  const int rc =
      MPI_Waitany(static_cast<int>(*count), requests_of(requests), &i, status_of(status));
  *index = index_of(i);
  done(ierror, rc);
}

void mpi_waitsome_f08_(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                       MPI_F08_status* statuses, MPI_Fint* ierror) {
  done(ierror, some(MPI_Waitsome, incount, requests, outcount, indices, statuses));
}

void mpi_test_f08_(MPI_Fint* request, MPI_Fint* flag, MPI_F08_status* status, MPI_Fint* ierror) {
  int f = 0;
  const int rc = MPI_Test(requests_of(request), &f, status_of(status));
  *flag = f ? 1 : 0;
  done(ierror, rc);
}

void mpi_testall_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, MPI_F08_status* statuses,
                      MPI_Fint* ierror) {
  int f = 0;
  const int rc =
      MPI_Testall(static_cast<int>(*count), requests_of(requests), &f, statuses_of(statuses));
  *flag = f ? 1 : 0;
  done(ierror, rc);
}

void mpi_testany_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag,
                      MPI_F08_status* status, MPI_Fint* ierror) {
  int i = MPI_UNDEFINED, f = 0;
  const int rc =
      MPI_Testany(static_cast<int>(*count), requests_of(requests), &i, &f, status_of(status));
  *index = index_of(i);
  *flag = f ? 1 : 0;
  done(ierror, rc);
}

void mpi_testsome_f08_(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                       MPI_F08_status* statuses, MPI_Fint* ierror) {
  done(ierror, some(MPI_Testsome, incount, requests, outcount, indices, statuses));
}

void mpi_request_get_status_f08_(MPI_Fint* request, MPI_Fint* flag, MPI_F08_status* status,
                                 MPI_Fint* ierror) {
  int f = 0;
  const int rc = MPI_Request_get_status(*requests_of(request), &f, status_of(status));
  *flag = f ? 1 : 0;
  done(ierror, rc);
}

void mpi_request_free_f08_(MPI_Fint* request, MPI_Fint* ierror) {
  done(ierror, MPI_Request_free(requests_of(request)));
}

void mpi_start_f08_(MPI_Fint* request, MPI_Fint* ierror) {
  done(ierror, MPI_Start(requests_of(request)));
}

void mpi_startall_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierror) {
  done(ierror, MPI_Startall(static_cast<int>(*count), requests_of(requests)));
}

}  // extern "C"

#endif  // MPICH_VERSION
