// Errors raised by toroid. Every message names the offending argument and its value.
#pragma once

#include <stdexcept>
#include <string>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed something toroid cannot work with (bad span, unsupported type/op pair, ...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A topology that cannot be parsed or does not fit the communicator.
class TopologyError : public Error {
 public:
  using Error::Error;
};

// An MPI call returned an error; the message carries MPI's own error string.
class MpiError : public Error {
 public:
  MpiError(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

}  // namespace toroid
TOROID_API_END
