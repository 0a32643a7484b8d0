// The network layer's transfer types (network/transfer.hpp) under the names the collective layer
// and its users have always used.
#pragma once

#include "network/transfer.hpp"

namespace hs::collective {

using network::Coflow;
using network::CoflowLoads;
using network::LinkLoad;
using network::Transfer;

}  // namespace hs::collective
