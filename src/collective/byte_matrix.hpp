// Byte matrices of one all-to-all-v (`hecate-sim collective --matrix FILE`): how many bytes each GPU
// sends each other GPU, given as pairs, in either of two forms:
//   * text: one `src dst bytes` per line, `#` starts a comment, blank lines skipped;
//   * JSON: {"pairs": [[src, dst, bytes], ...]} (the only key).
// Ranks are integers in [0, gpus), bytes a finite number in [0, 2^53]; a pair given twice, a rank
// out of range, a malformed line or element, an unknown or repeated JSON key is an InputError naming
// the file and the line of the element (exit 2). Pairs not given send nothing. A UTF-8 byte-order
// mark is skipped. The matrix is gpus x gpus, row = source.
#pragma once

#include <string>
#include <vector>

namespace hs::collective {

// Parses `text` (named `file` in diagnostics) into a row-major gpus x gpus matrix of bytes.
std::vector<double> parse_byte_matrix(const std::string& text, const std::string& file, int gpus);
// Reads `path` and parses it.
std::vector<double> read_byte_matrix(const std::string& path, int gpus);

}  // namespace hs::collective
