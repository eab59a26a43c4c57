#include "pmpi/errors.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "toroid/error.hpp"

namespace toroid::pmpi {
namespace {

struct Failure {
  int error_class;
  std::string message;
};

Failure classify(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const MpiError& e) {
    int cls = MPI_ERR_OTHER;
    if (PMPI_Error_class(e.code(), &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
    return {cls, e.what()};
  } catch (const TopologyError& e) {
    return {MPI_ERR_TOPOLOGY, e.what()};
  } catch (const InvalidArgument& e) {
    return {MPI_ERR_ARG, e.what()};
  } catch (const Error& e) {
    return {MPI_ERR_OTHER, e.what()};
  } catch (const std::bad_alloc&) {
    return {MPI_ERR_NO_MEM, "out of memory"};
  } catch (const std::exception& e) {
    return {MPI_ERR_OTHER, e.what()};
  } catch (...) {
    return {MPI_ERR_UNKNOWN, "unknown exception"};
  }
}

// MPI error codes cannot be freed, so one code per distinct message, and only so many: a
// program that retries a failing call in a loop gets the same code back each time.
constexpr std::size_t kMaxCodes = 64;

int code_with_text(int error_class, const std::string& text) {
  static std::mutex mutex;
  static std::map<std::string, int> codes;
  std::lock_guard lock(mutex);
  if (auto it = codes.find(text); it != codes.end()) return it->second;
  if (codes.size() >= kMaxCodes) return error_class;
  int code = error_class;
  if (PMPI_Add_error_code(error_class, &code) != MPI_SUCCESS) return error_class;
  // MPI copies at most MPI_MAX_ERROR_STRING - 1 characters.
  const std::string shown = text.substr(0, MPI_MAX_ERROR_STRING - 1);
  if (PMPI_Add_error_string(code, shown.c_str()) != MPI_SUCCESS) return error_class;
  codes.emplace(text, code);
  return code;
}

// Whether the communicator's handler ends the job (MPI_ERRORS_ARE_FATAL).
bool handler_is_fatal(MPI_Comm comm) {
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  if (PMPI_Comm_get_errhandler(comm, &handler) != MPI_SUCCESS) return false;
  const bool fatal = handler == MPI_ERRORS_ARE_FATAL;
  if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
  return fatal;
}

}  // namespace

int report_error(MPI_Comm comm, const char* call, std::exception_ptr failure) noexcept {
  int code = MPI_ERR_OTHER;
  std::string text;
  try {
    const Failure f = classify(failure);
    code = f.error_class;
    text = fmt::format("toroid: {}: {}", call, f.message);
    code = code_with_text(f.error_class, text);
  } catch (...) {
    // Out of memory while formatting: the bare class (or MPI_ERR_OTHER) still reaches the handler.
  }
  // The fatal handler's own report travels to mpirun on the way to the abort and can be lost
  // when several ranks abort at once ("ORTE_ERROR_LOG: Out of resource in show_help.c" was seen
  // under load), so the message is also written here, straight to this rank's stderr.
  if (!text.empty() && handler_is_fatal(comm)) {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    std::fprintf(stderr, "%s (rank %d)\n", text.c_str(), rank);
    std::fflush(stderr);
  }
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace toroid::pmpi
