// hecate-validate: runs on real GPUs the operations the simulator's cost models predict and writes
// measured.json (schema hecate-sim/measured@1) for `hecate-sim validate` and `calibrate`. One rank
// per GPU, launched like nccl-tests (mpirun -np N, srun) or alone on one GPU; the suites are in
// suites.hpp, the command line in measure/validate_options.hpp. Exit codes: 0 done, 1 a CUDA / NCCL /
// MPI failure or a wrong result, 2 bad input, 77 no GPU (the `gpu` test suite's "skipped").
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "context.hpp"
#include "suites.hpp"
#include "util/diagnostics.hpp"

using namespace hs;

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::fputs(measure::validate_usage().c_str(), stdout);
    return 0;
  }
  measure::ValidateOptions o;
  try {
    o = measure::parse_validate_options(args);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "hecate-validate: %s\n%s", e.what(), measure::validate_usage().c_str());
    return kExitBadInput;
  }
  using measure::Suite;
  const bool multi_rank_suites = o.has(Suite::kCollectives) || o.has(Suite::kAllToAllV) || o.has(Suite::kSparse);
  if (!validate::kHaveNccl && multi_rank_suites) {
    std::fprintf(stderr, "hecate-validate: --suite: this hecate-validate was built without NCCL: the collectives, alltoallv "
                         "and sparse suites need it (gemm, materialize and overlap run without)\n");
    return kExitBadInput;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "hecate-validate: no CUDA device; skipped\n");
    return 77;
  }
  int rank = 0;
  std::unique_ptr<validate::Bootstrap> boot;
  // A failing rank takes the others down with it (they may be waiting in a collective).
  auto fail = [&](int code) {
    if (boot && boot->size() > 1) boot->abort(code);
    return code;
  };
  try {
    boot = validate::make_bootstrap(&argc, &argv);
    rank = boot->rank();
    const bool nccl = validate::kHaveNccl && (o.self_test || multi_rank_suites || o.has(Suite::kOverlap));
    std::vector<std::string> command{"hecate-validate"};
    command.insert(command.end(), args.begin(), args.end());
    validate::Context c(*boot, nccl, command);
    if (rank == 0) std::printf("%s\n", measure::provenance_line(c.provenance).c_str());
    if (o.self_test) return boot->all_true(validate::self_test(c)) ? 0 : 1;
    c.provenance.method = "CUDA events per iteration after warm-up iterations; ranks meet at a barrier before each; an "
                          "iteration's time is the slowest rank's; median and quartiles over iterations; data random and "
                          "never zero, every result checked against a CPU reference before timing";
    validate::Report report;
    for (const Suite s : o.suites) {
      switch (s) {
        case Suite::kGemm: validate::run_gemm(c, o, report); break;
#if HS_VALIDATE_NCCL
        case Suite::kCollectives: validate::run_collectives(c, o, report); break;
        case Suite::kAllToAllV: validate::run_alltoallv(c, o, report); break;
        case Suite::kSparse: validate::run_sparse(c, o, report); break;
#else
        case Suite::kCollectives:
        case Suite::kAllToAllV:
        case Suite::kSparse: break;  // refused above
#endif
        case Suite::kMaterialize: validate::run_materialize(c, o, report); break;
        case Suite::kOverlap: validate::run_overlap(c, o, report); break;
      }
    }
    if (rank == 0) {
      validate::write_report(o.out, c.provenance, report);
      std::printf("wrote %s\n", o.out.c_str());
    }
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) std::fprintf(stderr, "hecate-validate: rank %d: %s\n", rank, to_string(d).c_str());
    return fail(kExitBadInput);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hecate-validate: rank %d: %s\n", rank, e.what());
    return fail(1);
  }
  return 0;
}
