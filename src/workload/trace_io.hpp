// Reading and writing expert-load trace JSON v1 (".json" or ".json.gz").
//
// The reader uses simdjson's On-Demand API (chosen over nlohmann-json for speed on large traces: see
// tests/bench/trace_read_bench) and maps every problem back to file:line:col of the offending value.
// All problems of a file are collected (up to a cap) before InputError is thrown.
#pragma once

#include <memory>

#include <string>

#include "util/diagnostics.hpp"
#include "util/interrupt.hpp"
#include "workload/trace.hpp"

namespace hs::workload {

// Reads and validates a trace. Throws InputError (all problems) on bad input.
Trace read_trace(const std::string& path);
// Same, from text already in memory; `file` only names the input in diagnostics.
Trace parse_trace(const std::string& text, const std::string& file);

// Serializes a trace as JSON v1 (one record per line).
std::string trace_to_json(const Trace& t);
// Writes atomically; ".gz" suffix compresses.
void write_trace(const Trace& t, const std::string& path);

// Streams a trace to a file record by record (memory: one record), atomically (a temporary file
// renamed on close(); an unclosed writer removes it). ".gz" compresses. `header` gives every field
// but the records.
class TraceWriter {
 public:
  TraceWriter(const std::string& path, const Trace& header);
  ~TraceWriter();
  void write(const TraceRecord& r);
  void close();

 private:
  void put(const std::string& s);
  std::string path_, tmp_;
  std::unique_ptr<TempFileGuard> guard_;  // removes tmp_ if the process is interrupted
  void* file_ = nullptr;  // FILE* or gzFile
  bool gz_ = false, first_ = true;
  const Trace& header_;
  std::string buf_;
};

// Checks the invariants of trace.hpp; used by the reader and by producers' tests.
void validate_trace(const Trace& t, const std::string& file, Diagnostics& diags);

}  // namespace hs::workload
