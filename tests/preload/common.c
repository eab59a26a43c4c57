#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "common.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

long long served_calls(void) {
  /* Looked up, not linked: the program must also run without the preload. */
  unsigned long long (*counter)(void) =
      (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "toroid_preload_calls");
  return counter ? (long long)counter() : -1;
}

long resident_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0 && sscanf(line + 6, "%ld", &kib) == 1) break;
  fclose(f);
  return kib;
}

void must(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fprintf(stderr, "%s failed: %.*s\n", what, len, text);
  MPI_Abort(MPI_COMM_WORLD, 2);
}
