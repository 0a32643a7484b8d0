#include <doctest/doctest.h>

#include "support/test_platforms.hpp"
#include "workload/parallel_layout.hpp"

using namespace hs;
using workload::ParallelLayout;

namespace {
const SourceLocation kSrc{"--layout", 0, 0};
// 16 MoE blocks, 16 experts, 8 heads, seq 1024: divisible by everything the tests use.
workload::ModelSpec model16() { return test::small_moe_model("m16", 16, 2, 1024, 1, 16); }

// The fields the diagnostics of a failed resolve name, in order.
std::vector<std::string> error_fields(const std::string& text, int n, int per_node) {
  std::vector<std::string> out;
  try {
    auto l = workload::parse_parallel_layout(text, kSrc);
    workload::resolve_layout(l, n, per_node, model16(), kSrc);
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) out.push_back(d.field);
  }
  return out;
}
}  // namespace

TEST_CASE("layout: parse, derive dp, Megatron-Core's tp-cp-ep-dp-pp rank order") {
  auto l = workload::parse_parallel_layout("tp=2,pp=2,ep=4", kSrc);
  workload::resolve_layout(l, 16, 8, model16(), kSrc);
  CHECK(l.dp == 4);
  CHECK(workload::describe(l) == "tp=2,pp=2,dp=4,ep=4,sp=on,tp_span=node,dist_opt=on,recompute=none");
  // rank = tp_rank + tp * (dp_rank + dp * pp_rank): TP fastest, PP slowest.
  CHECK(l.rank(1, 3, 1) == 1 + 2 * (3 + 4 * 1));
  CHECK(l.tp_rank(15) == 1);
  CHECK(l.dp_rank(15) == 3);
  CHECK(l.pp_rank(15) == 1);
  CHECK(l.tp_groups().front() == std::vector<int>{0, 1});
  CHECK(l.tp_groups().size() == 8);
  CHECK(l.dp_groups().front() == std::vector<int>{0, 2, 4, 6});
  CHECK(l.dp_groups()[2] == std::vector<int>{8, 10, 12, 14});  // stage 1, tp rank 0
  // EP groups: ep consecutive ranks of a stage; expert-DP groups stride by ep inside the stage.
  CHECK(l.ep_groups().size() == 4);
  CHECK(l.ep_groups()[1] == std::vector<int>{4, 5, 6, 7});
  CHECK(l.edp() == 2);
  CHECK(l.edp_groups()[0] == std::vector<int>{0, 4});
  CHECK(l.edp_groups()[5] == std::vector<int>{9, 13});
  CHECK(l.stage_gpus(1).front() == 8);
  // 16 blocks over 2 stages; 61 over 16: the first 13 stages take 4, the last 3 take 3.
  CHECK(l.stage_blocks(1, 16) == std::pair{8, 16});
  ParallelLayout p16;
  p16.pp = 16;
  CHECK(p16.stage_blocks(0, 61) == std::pair{0, 4});
  CHECK(p16.stage_blocks(12, 61) == std::pair{48, 52});
  CHECK(p16.stage_blocks(13, 61) == std::pair{52, 55});
  CHECK(p16.stage_blocks(15, 61) == std::pair{58, 61});
}

TEST_CASE("layout errors name the field, all collected") {
  CHECK(error_fields("tp=3", 16, 8) == std::vector<std::string>{"layout.tp", "layout.tp", "layout.tp", "layout.sp"});
  CHECK(error_fields("tp=8,tp_span=any", 16, 4).empty());
  CHECK(error_fields("tp=8", 16, 4) == std::vector<std::string>{"layout.tp"});  // crosses nodes
  CHECK(error_fields("tp=2,pp=2,dp=2", 16, 8) == std::vector<std::string>{"layout.dp"});
  CHECK(error_fields("pp=32", 32, 8) == std::vector<std::string>{"layout.pp"});
  CHECK(error_fields("ep=32", 32, 8) == std::vector<std::string>{"layout.ep"});           // 16 experts
  CHECK(error_fields("pp=4,ep=16", 32, 8) == std::vector<std::string>{"layout.ep"});      // stage of 8
  CHECK(error_fields("tp=2,sp=off", 16, 8) == std::vector<std::string>{"layout.sp"});
  CHECK(error_fields("tp=0,xx=1,sp=maybe,tp", 16, 8) ==
        std::vector<std::string>{"layout.tp", "layout.xx", "layout.sp", "layout"});
}
