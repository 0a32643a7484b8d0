// The per-GPU sums of an all-to-all's byte matrix (AnalyticNetwork::scan_sums) for eight
// consecutive rows at a time, in the lanes of AVX-512 registers where the CPU has them.
//
// Over columns [c0, c1) of rows r0 .. r0 + 7 of the n x n matrix m (row-major), all of one locality,
// an entry b of row i, column c carries bytes when !(b <= 0) and c != r0 + i (the diagonal stays
// on its GPU); bb = carries ? b : +0.0. Then, exactly as scan_sums' scalar loop:
//   * row sums: sum[i] += bb over c in column order, count[i] += carries, most = the maximum of
//     `most` and every bb;
//   * column sums: in_b[c] = in_b[c] + bb(row 0) + bb(row 1) + ... + bb(row 7), in row order;
//     in_c[c] and recvs[c] += the number of rows that carry.
// Every sum takes the same additions in the same order as one entry after another (entries without
// bytes add +0.0, as there), so the results are identical: the row sums run with one row per lane
// (a gather per column), the column sums with one column per lane (one load per row).
#pragma once

#include <cstddef>

namespace hs::collective {

// Whether row_band_sums can run here (AVX-512F and VL, checked once per call site).
bool row_band_sums_available();

void row_band_sums(const double* m, size_t n, int r0, int c0, int c1, double* in_b, int* in_c, int* recvs,
                   double (&sum)[8], int (&count)[8], double& most);

}  // namespace hs::collective
