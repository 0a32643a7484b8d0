#include "measure/measured_json.hpp"

#include <fmt/format.h>

#include "util/text_escape.hpp"

namespace hs::measure {

namespace {
// Rows, one per line, inside `"rows": [...]`.
template <class T, class F>
std::string rows_of(const std::vector<T>& rows, F row) {
  std::string body;
  for (const auto& r : rows) body += (body.empty() ? "    " : ",\n    ") + row(r);
  return "[\n" + body + "\n  ]";
}
std::string str(const std::string& s) { return "\"" + json_escape(s) + "\""; }
double ratio(double a, double b) { return b > 0 ? a / b : 0; }
}  // namespace

std::string summary_fields(const Summary& s) {
  return fmt::format("\"median_s\": {:.9g}, \"min_s\": {:.9g}, \"p25_s\": {:.9g}, \"p75_s\": {:.9g}, \"max_s\": {:.9g}, \"iters\": {}",
                     s.median, s.min, s.p25, s.p75, s.max, s.n);
}

double CollectiveResult::algbw() const { return time.median > 0 ? static_cast<double>(buffers.size_bytes) / time.median : 0; }

double CollectiveResult::busbw(int ranks) const { return algbw() * collective::bus_factor(op, ranks); }

std::string collectives_section(int ranks, int nodes, const std::vector<CollectiveResult>& rows) {
  return fmt::format("{{\"dtype\": \"float\", \"redop\": \"sum\", \"root\": 0, \"ranks\": {}, \"nodes\": {}, "
                     "\"alltoall\": \"grouped ncclSend/ncclRecv\", \"rows\": {}}}",
                     ranks, nodes, rows_of(rows, [&](const CollectiveResult& r) {
                       return fmt::format("{{\"op\": \"{}\", \"bytes\": {}, \"count\": {}, {}, \"algbw_Bps\": {:.6g}, "
                                          "\"busbw_Bps\": {:.6g}}}",
                                          collective::to_string(r.op), r.buffers.size_bytes, r.buffers.count,
                                          summary_fields(r.time), r.algbw(), r.busbw(ranks));
                     }));
}


double ExpertFfnRow::forward_s() const {
  double t = 0;
  for (const auto& g : gemms) t += g.time.median;
  return t;
}

std::string expert_ffn_section(long d_model, long d_ffn, int mats, const std::vector<ExpertFfnRow>& rows) {
  return fmt::format("{{\"d_model\": {}, \"d_ffn\": {}, \"mats\": {}, \"dtype\": \"bf16\", \"accumulate\": \"fp32\", \"rows\": {}}}",
                     d_model, d_ffn, mats, rows_of(rows, [](const ExpertFfnRow& r) {
                       std::string g;
                       for (const auto& x : r.gemms)
                         g += fmt::format("{}{{\"m\": {}, \"n\": {}, \"k\": {}, {}}}", g.empty() ? "" : ", ", x.m, x.n, x.k,
                                          summary_fields(x.time));
                       return fmt::format("{{\"tokens\": {}, \"forward_s\": {:.9g}, \"gemms\": [{}]}}", r.tokens, r.forward_s(), g);
                     }));
}

std::string expert_ffn_batched_section(int experts, const std::vector<std::pair<long, double>>& tokens_forward_s) {
  return fmt::format("{{\"experts\": {}, \"call\": \"cublasGemmStridedBatchedEx, one per weight matrix\", \"rows\": {}}}", experts,
                     rows_of(tokens_forward_s, [](const std::pair<long, double>& r) {
                       return fmt::format("{{\"tokens\": {}, \"forward_s\": {:.9g}}}", r.first, r.second);
                     }));
}

std::string hbm_copy_section(std::uint64_t bytes, const Summary& time) {
  return fmt::format("{{\"bytes\": {}, {}, \"bandwidth_Bps\": {:.6g}}}", bytes, summary_fields(time),
                     ratio(2.0 * static_cast<double>(bytes), time.median));
}

std::string device_section(const GpuInfo& g) {
  return fmt::format("{{\"name\": {}, \"sms\": {}, \"memory_bytes\": {}, \"l2_bytes\": {}, \"cc\": \"{}.{}\"}}", str(g.name), g.sms,
                     g.memory_bytes, g.l2_bytes, g.cc_major, g.cc_minor);
}

std::string alltoallv_section(const std::string& matrix, int ranks, const std::vector<AllToAllVRow>& rows) {
  return fmt::format("{{\"matrix\": {}, \"ranks\": {}, \"implementation\": \"grouped ncclSend/ncclRecv\", \"rows\": {}}}", str(matrix),
                     ranks, rows_of(rows, [](const AllToAllVRow& r) {
                       return fmt::format("{{\"direction\": {}, \"total_bytes\": {:.0f}, \"max_rank_send_bytes\": {:.0f}, {}}}",
                                          str(r.direction), r.total_bytes, r.max_rank_send_bytes, summary_fields(r.time));
                     }));
}

std::string sparse_section(const std::string& plan, const std::string& strategy, double scale, int ranks,
                           const std::vector<SparseRow>& rows) {
  return fmt::format("{{\"plan\": {}, \"strategy\": {}, \"scale\": {:.9g}, \"ranks\": {}, \"implementation\": \"grouped "
                     "ncclSend/ncclRecv per executor round\", \"rows\": {}}}",
                     str(plan), str(strategy), scale, ranks, rows_of(rows, [](const SparseRow& r) {
                       return fmt::format("{{\"layer\": {}, \"chunk_bytes\": {}, \"spag_transfers\": {}, \"spag_rounds\": {}, "
                                          "\"spag\": {{{}}}, \"sprs_transfers\": {}, \"sprs_rounds\": {}, \"sprs\": {{{}}}}}",
                                          r.layer, r.chunk_bytes, r.spag_transfers, r.spag_rounds, summary_fields(r.spag),
                                          r.sprs_transfers, r.sprs_rounds, summary_fields(r.sprs));
                     }));
}

std::string materialize_section(const std::vector<MaterializeRow>& rows) {
  return fmt::format("{{\"dtype\": \"bf16\", \"rows\": {}}}", rows_of(rows, [](const MaterializeRow& r) {
    if (r.flops > 0) {
      std::string t;
      for (long x : r.tokens_per_expert) t += fmt::format("{}{}", t.empty() ? "" : ", ", x);
      return fmt::format("{{\"kernel\": {}, \"d_model\": {}, \"d_ffn\": {}, \"tokens_per_expert\": [{}], {}, \"flops\": {:.6g}, "
                         "\"flops_per_s\": {:.6g}}}",
                         str(r.kernel), r.d_model, r.d_ffn, t, summary_fields(r.time), r.flops, ratio(r.flops, r.time.median));
    }
    std::string extra;
    if (r.experts) extra += fmt::format(", \"experts\": {}", r.experts);
    if (r.tokens) extra += fmt::format(", \"tokens\": {}, \"row_bytes\": {}", r.tokens, r.row_bytes);
    return fmt::format("{{\"kernel\": {}, \"bytes\": {}, {}, \"bandwidth_Bps\": {:.6g}{}}}", str(r.kernel), r.bytes,
                       summary_fields(r.time), ratio(2.0 * static_cast<double>(r.bytes), r.time.median), extra);
  }));
}

double OverlapRow::gemm_slowdown() const { return ratio(gemm_overlapped.median, gemm_alone.median); }
double OverlapRow::comm_slowdown() const { return ratio(comm_overlapped.median, comm_alone.median); }

std::string overlap_section(long m, long n, long k, int ranks, const std::vector<OverlapRow>& rows) {
  return fmt::format("{{\"gemm\": {{\"m\": {}, \"n\": {}, \"k\": {}}}, \"ranks\": {}, \"rows\": {}}}", m, n, k, ranks,
                     rows_of(rows, [](const OverlapRow& r) {
                       return fmt::format("{{\"comm\": {}, \"comm_bytes\": {}, \"gemm_calls\": {}, \"comm_calls\": {}, "
                                          "\"gemm_alone\": {{{}}}, \"gemm_overlapped\": {{{}}}, \"comm_alone\": {{{}}}, "
                                          "\"comm_overlapped\": {{{}}}, \"gemm_slowdown\": {:.6g}, \"comm_slowdown\": {:.6g}}}",
                                          str(r.comm), r.comm_bytes, r.gemm_calls, r.comm_calls, summary_fields(r.gemm_alone),
                                          summary_fields(r.gemm_overlapped), summary_fields(r.comm_alone),
                                          summary_fields(r.comm_overlapped), r.gemm_slowdown(), r.comm_slowdown());
                     }));
}

std::string measured_document(const Provenance& p, const std::vector<std::pair<std::string, std::string>>& sections) {
  std::string js = "{\n  \"schema\": \"hecate-sim/measured@1\",\n";
  js += "  \"provenance\": " + provenance_json(p, 4);
  for (const auto& [name, value] : sections) js += fmt::format(",\n  \"{}\": {}", name, value);
  js += "\n}\n";
  return js;
}

}  // namespace hs::measure
