#include "app/mpi_sweep.hpp"

#include <map>
#include <stdexcept>
#include <string>

#ifdef HS_HAVE_MPI
#include <mpi.h>
#endif

namespace hs::app {

#ifdef HS_HAVE_MPI

namespace {
constexpr int kTagRow = 1;    // worker -> rank 0: a row (JSON line) or an empty "ready"
constexpr int kTagPoint = 2;  // rank 0 -> worker: a sweep index, or -1 to stop

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(std::string(what) + ": " + std::string(msg, len));
  }
}
}  // namespace

MpiSession::MpiSession() {
  check(MPI_Init(nullptr, nullptr), "MPI_Init");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

void mpi_coordinate(const std::vector<int>& points, const std::function<sweep::Row(int)>& eval,
                    const std::function<void(sweep::Row&&)>& commit) {
  int size = 1;
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (size == 1) {
    for (int p : points) commit(eval(p));
    return;
  }
  std::map<int, size_t> position;  // sweep index -> position in `points`
  for (size_t i = 0; i < points.size(); ++i) position[points[i]] = i;
  std::map<size_t, sweep::Row> done;
  size_t next = 0, committed = 0;
  int active = size - 1;
  while (active > 0) {
    MPI_Status st;
    check(MPI_Probe(MPI_ANY_SOURCE, kTagRow, MPI_COMM_WORLD, &st), "MPI_Probe");
    int count = 0;
    check(MPI_Get_count(&st, MPI_CHAR, &count), "MPI_Get_count");
    std::string line(static_cast<size_t>(count), '\0');
    check(MPI_Recv(line.data(), count, MPI_CHAR, st.MPI_SOURCE, kTagRow, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    if (!line.empty()) {
      auto row = sweep::parse_json_line(line);
      if (!row || !position.count(row->index))
        throw std::runtime_error("rank " + std::to_string(st.MPI_SOURCE) + " sent a malformed row");
      done.emplace(position[row->index], std::move(*row));
      while (done.count(committed)) {
        commit(std::move(done[committed]));
        done.erase(committed++);
      }
    }
    int send = -1;
    if (next < points.size()) send = points[next++];
    else --active;
    check(MPI_Send(&send, 1, MPI_INT, st.MPI_SOURCE, kTagPoint, MPI_COMM_WORLD), "MPI_Send");
  }
  if (committed != points.size()) throw std::runtime_error("MPI sweep ended with points missing");
}

void mpi_work(const std::function<sweep::Row(int)>& eval) {
  std::string line;  // empty: ready for the first point
  while (true) {
    // Rows end in a newline; the wire form drops it so that parse_json_line sees the object alone.
    std::string wire = line.empty() ? line : line.substr(0, line.size() - 1);
    check(MPI_Send(wire.data(), static_cast<int>(wire.size()), MPI_CHAR, 0, kTagRow, MPI_COMM_WORLD), "MPI_Send");
    int point = -1;
    check(MPI_Recv(&point, 1, MPI_INT, 0, kTagPoint, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    if (point < 0) return;
    line = sweep::to_json_line(eval(point));
  }
}

#else

MpiSession::MpiSession() {
  throw std::runtime_error("this hecate-sim was built without MPI (install libopenmpi-dev and rebuild; Meson option -Dmpi)");
}
MpiSession::~MpiSession() = default;
void MpiSession::abort(int code) { std::exit(code); }
void mpi_coordinate(const std::vector<int>&, const std::function<sweep::Row(int)>&, const std::function<void(sweep::Row&&)>&) {}
void mpi_work(const std::function<sweep::Row(int)>&) {}

#endif

}  // namespace hs::app
