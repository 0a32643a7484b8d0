// Message-size sweeps as nccl-tests spells them: `-b 8 -e 8G -f 2` runs 8, 16, 32, ... bytes up to
// and including 8 GiB. Sizes take nccl-tests' suffixes K, M, G (powers of 1024, either case, an
// optional trailing B); a plain number is bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hs::measure {

// "8" -> 8, "64K" -> 65536, "8G" -> 8589934592. Throws std::invalid_argument naming `flag` for an
// empty, non-numeric, zero or overflowing value.
std::uint64_t parse_size(const std::string& text, const std::string& flag);

// min, min*factor, min*factor^2, ... while <= max (max itself only when the sequence reaches it).
// Throws std::invalid_argument when min > max or factor < 2 (factor 1 would never end).
std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, std::uint64_t factor);

}  // namespace hs::measure
