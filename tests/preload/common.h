/* Helpers shared by the preload test programs. They are plain C against MPI only: they cannot
 * see toroid except through the counter the preload exports, looked up with dlsym. */
#ifndef TOROID_PRELOAD_TEST_COMMON_H
#define TOROID_PRELOAD_TEST_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Calls toroid has served in this process, or -1 when the preload is not loaded. */
long long served_calls(void);

/* VmRSS of this process in KiB (from /proc/self/status), -1 when unreadable. */
long resident_kib(void);

/* Stops the job with a message when an MPI call fails. */
void must(int rc, const char* what);

#endif
