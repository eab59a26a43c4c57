#include "exec/request_table.hpp"

#include "toroid/mpi_helpers.hpp"

namespace toroid::exec {

MPI_Request* RequestTable::post(RequestOwner* owner, std::uint32_t segment) {
  int i;
  if (!free_.empty()) {
    i = free_.back();
    free_.pop_back();
  } else {
    i = static_cast<int>(requests_.size());
    requests_.push_back(MPI_REQUEST_NULL);
    entries_.emplace_back();
  }
  entries_[static_cast<std::size_t>(i)] = {owner, segment};
  ++open_;
  return &requests_[static_cast<std::size_t>(i)];
}

int RequestTable::handle(int n) {
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(done_[static_cast<std::size_t>(k)]);
    const Entry e = entries_[i];
    entries_[i] = {};
    free_.push_back(static_cast<int>(i));
    --open_;
    if (e.owner) e.owner->completed(e.segment);
  }
  return n;
}

int RequestTable::complete(bool block) {
  if (open_ == 0) return 0;
  done_.resize(requests_.size());
  int n = 0;
  const int count = static_cast<int>(requests_.size());
  if (block)
    mpi_check(MPI_Waitsome(count, requests_.data(), &n, done_.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitsome");
  else
    mpi_check(MPI_Testsome(count, requests_.data(), &n, done_.data(), MPI_STATUSES_IGNORE),
              "MPI_Testsome");
  return n == MPI_UNDEFINED ? 0 : handle(n);
}

void RequestTable::abandon() {
  for (Entry& e : entries_) e.owner = nullptr;
}

}  // namespace toroid::exec
