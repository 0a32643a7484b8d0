#include "measure/measured_json.hpp"

#include <fmt/format.h>

namespace hs::measure {

std::string summary_fields(const Summary& s) {
  return fmt::format("\"median_s\": {:.9g}, \"min_s\": {:.9g}, \"p25_s\": {:.9g}, \"p75_s\": {:.9g}, \"max_s\": {:.9g}, \"iters\": {}",
                     s.median, s.min, s.p25, s.p75, s.max, s.n);
}

double CollectiveResult::algbw() const { return time.median > 0 ? static_cast<double>(buffers.size_bytes) / time.median : 0; }

double CollectiveResult::busbw(int ranks) const { return algbw() * collective::bus_factor(op, ranks); }

std::string collectives_section(int ranks, int nodes, const std::vector<CollectiveResult>& rows) {
  std::string body;
  for (const auto& r : rows)
    body += fmt::format("{}    {{\"op\": \"{}\", \"bytes\": {}, \"count\": {}, {}, \"algbw_Bps\": {:.6g}, \"busbw_Bps\": {:.6g}}}",
                        body.empty() ? "" : ",\n", collective::to_string(r.op), r.buffers.size_bytes, r.buffers.count,
                        summary_fields(r.time), r.algbw(), r.busbw(ranks));
  return fmt::format("{{\"dtype\": \"float\", \"redop\": \"sum\", \"root\": 0, \"ranks\": {}, \"nodes\": {}, "
                     "\"alltoall\": \"grouped ncclSend/ncclRecv\", \"rows\": [\n{}\n  ]}}",
                     ranks, nodes, body);
}

std::string measured_document(const Provenance& p, const std::vector<std::pair<std::string, std::string>>& sections) {
  std::string js = "{\n  \"schema\": \"hecate-sim/measured@1\",\n";
  js += "  \"provenance\": " + provenance_json(p, 4);
  for (const auto& [name, value] : sections) js += fmt::format(",\n  \"{}\": {}", name, value);
  js += "\n}\n";
  return js;
}

}  // namespace hs::measure
