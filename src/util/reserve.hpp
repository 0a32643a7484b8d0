// Room in a vector for n elements in one step, where pushing back up to n would double its way
// there (a million entries: each doubling copies and faults in the pages again). Still geometric,
// so a vector that grows a little per call costs O(1) per element.
#pragma once

#include <algorithm>
#include <cstddef>

namespace hs {

template <class V>
void reserve_geometric(V& v, size_t n) {
  if (n > v.capacity()) v.reserve(std::max(n, 2 * v.capacity()));
}

}  // namespace hs
