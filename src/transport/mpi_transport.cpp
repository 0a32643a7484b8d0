#include "transport/mpi_transport.hpp"

#include <climits>
#include <stdexcept>
#include <vector>
#include <fmt/format.h>
#include <mpi.h>

namespace hs::transport {

namespace {

constexpr int kTag = 0x5047;  // one tag: messages between two ranks match in posting order

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(fmt::format("{} failed: {}", what, std::string(text, static_cast<size_t>(len))));
}

int count_of(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(fmt::format("message of {} floats exceeds MPI's int count", n));
  return static_cast<int>(n);
}

}  // namespace

struct MpiTransport::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<MPI_Request> requests;
  std::vector<int> expected;  // floats each pending request expects (receives), -1 for sends
  std::vector<int> peers;
};

MpiTransport::MpiTransport() : impl_(std::make_unique<Impl>()) {
  check(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(impl_->comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(impl_->comm, &size_), "MPI_Comm_size");
}

MpiTransport::~MpiTransport() {
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
}

void MpiTransport::group_start() {
  if (in_group_) throw std::logic_error("group_start inside a group");
  in_group_ = true;
}

void MpiTransport::send(int dst, std::span<const float> data) {
  // MPI's C interface takes a non-const buffer only in old versions; the data is not modified.
  void* buf = const_cast<float*>(data.data());
  if (!in_group_) {
    check(MPI_Send(buf, count_of(data.size()), MPI_FLOAT, dst, kTag, impl_->comm), "MPI_Send");
    return;
  }
  MPI_Request r;
  check(MPI_Isend(buf, count_of(data.size()), MPI_FLOAT, dst, kTag, impl_->comm, &r), "MPI_Isend");
  impl_->requests.push_back(r);
  impl_->expected.push_back(-1);
  impl_->peers.push_back(dst);
}

void MpiTransport::recv(int src, std::span<float> data) {
  // A longer message fails with MPI_ERR_TRUNCATE; a shorter one is caught by its count.
  const int n = count_of(data.size());
  if (!in_group_) {
    MPI_Status st;
    check(MPI_Recv(data.data(), n, MPI_FLOAT, src, kTag, impl_->comm, &st), "MPI_Recv");
    int got = 0;
    MPI_Get_count(&st, MPI_FLOAT, &got);
    if (got != n) throw std::runtime_error(fmt::format("rank {}: message from rank {} has {} floats, expected {}", rank_, src, got, n));
    return;
  }
  MPI_Request r;
  check(MPI_Irecv(data.data(), n, MPI_FLOAT, src, kTag, impl_->comm, &r), "MPI_Irecv");
  impl_->requests.push_back(r);
  impl_->expected.push_back(n);
  impl_->peers.push_back(src);
}

void MpiTransport::group_end() {
  if (!in_group_) throw std::logic_error("group_end without group_start");
  in_group_ = false;
  auto& req = impl_->requests;
  std::vector<MPI_Status> st(req.size());
  const int rc = req.empty() ? MPI_SUCCESS : MPI_Waitall(static_cast<int>(req.size()), req.data(), st.data());
  std::vector<int> expected = std::move(impl_->expected);
  std::vector<int> peers = std::move(impl_->peers);
  req.clear();
  impl_->expected.clear();
  impl_->peers.clear();
  check(rc, "MPI_Waitall");
  for (size_t i = 0; i < st.size(); ++i) {
    if (expected[i] < 0) continue;
    int got = 0;
    MPI_Get_count(&st[i], MPI_FLOAT, &got);
    if (got != expected[i])
      throw std::runtime_error(
          fmt::format("rank {}: message from rank {} has {} floats, expected {}", rank_, peers[i], got, expected[i]));
  }
}

}  // namespace hs::transport
