#include <doctest/doctest.h>

#include "support/test_platforms.hpp"
#include "layout/parallel_layout.hpp"

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
  CHECK(workload::describe(l) == "tp=2,pp=2,dp=4,ep=4,sp=on,tp_span=node,dist_opt=on,recompute=none,overlap_grad_reduce=off,overlap_param_gather=off");
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
  // Expert tensor parallelism: etp=1 (whole experts) is what runs; etp > 1 is refused, named.
  CHECK(error_fields("tp=2,ep=4,etp=1", 16, 8).empty());
  CHECK(error_fields("tp=2,ep=4,etp=2", 16, 8) == std::vector<std::string>{"layout.etp"});
  // Sizes whose products overflow 32 bits (65,536^2 = 2^32) are errors, not wrapped arithmetic.
  CHECK(error_fields("tp=65536,pp=65536,tp_span=any", 16, 8).front() == "layout.tp");
  CHECK(error_fields("tp=0,xx=1,sp=maybe,tp", 16, 8) ==
        std::vector<std::string>{"layout.tp", "layout.xx", "layout.sp", "layout"});
}

TEST_CASE("layout presets: the published layouts by name, overridable; an unknown name lists them") {
  // DeepSeek-V3 (arXiv 2412.19437 §3.2): PP16, EP64, ZeRO-1 DP, no TP; dp derived from the cluster.
  auto ds = workload::parse_parallel_layout("deepseek-v3", kSrc);
  CHECK(ds.tp == 1);
  CHECK(ds.pp == 16);
  CHECK(ds.ep == 64);
  CHECK(ds.dp == 0);
  CHECK(ds.distributed_optimizer);
  CHECK(ds.text == "deepseek-v3");
  // On 2,048 GPUs: 128 per stage, two EP groups of 64 each, expert-DP 2.
  auto ds_model = test::small_moe_model("ds", 256, 8, 4096, 1, 64);
  ds_model.grad_accum = 32;  // DualPipe: an even number of micro-batches, at least 2 x pp
  workload::resolve_layout(ds, 2048, 8, ds_model, kSrc);
  CHECK(ds.dp == 128);
  CHECK(ds.schedule == workload::Schedule::kDualPipe);  // §3.2.1
  CHECK(ds.edp() == 2);
  // Megatron-LM's recommended Mixtral 8x7B training layout TP1EP8PP4; later keys override.
  auto mx = workload::parse_parallel_layout("mixtral-8x7b,recompute=full,pp=2", kSrc);
  CHECK(mx.ep == 8);
  CHECK(mx.pp == 2);
  CHECK(mx.recompute == workload::Recompute::kFull);
  CHECK(error_fields("nosuch,tp=2", 16, 8) == std::vector<std::string>{"layout"});
  try {
    workload::parse_parallel_layout("nosuch", kSrc);
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.diagnostics().front().message.find("presets: deepseek-v3, mixtral-8x7b") != std::string::npos);
  }
  // A preset only as the first item.
  CHECK(error_fields("tp=2,deepseek-v3", 16, 8) == std::vector<std::string>{"layout"});
}

TEST_CASE("interleaved stages: chunks of pp x vpp, stage s holds chunks s, s + pp, ...; Megatron's rules") {
  auto m = model16();
  m.grad_accum = 4;
  auto l = workload::parse_parallel_layout("pp=2,vpp=2", kSrc);
  workload::resolve_layout(l, 16, 8, m, kSrc);
  CHECK(workload::describe(l) == "tp=1,pp=2,dp=8,ep=1,vpp=2,sp=on,tp_span=node,dist_opt=on,recompute=none,overlap_grad_reduce=off,"
                                  "overlap_param_gather=off");
  // 16 blocks in 4 chunks of 4: virtual stages 0..3 = blocks 0-3, 4-7, 8-11, 12-15; stage 0 holds
  // chunks 0 and 2, stage 1 chunks 1 and 3.
  CHECK(l.chunk_blocks(2, 16) == std::pair{8, 12});
  CHECK(l.stage_block_ids(0, 16) == std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11});
  CHECK(l.stage_block_ids(1, 16) == std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15});
  CHECK(l.stage_of_block(9, 16) == 0);
  CHECK(l.stage_of_block(13, 16) == 1);
  // Without interleaving the stage's blocks are its one range.
  auto p = workload::parse_parallel_layout("pp=2", kSrc);
  CHECK(p.stage_block_ids(1, 16) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  // Rules: pp >= 2; blocks divisible by pp x vpp (16 % (2 x 3) != 0); m a multiple of pp.
  auto fields = [&](const std::string& text, int grad_accum) {
    std::vector<std::string> out;
    auto mm = model16();
    mm.grad_accum = grad_accum;
    try {
      auto x = workload::parse_parallel_layout(text, kSrc);
      workload::resolve_layout(x, 16, 8, mm, kSrc);
    } catch (const InputError& e) {
      for (const auto& d : e.diagnostics()) out.push_back(d.field + ": " + d.message);
    }
    return out;
  };
  CHECK(fields("pp=2,vpp=2", 4).empty());
  CHECK(fields("vpp=2", 4).size() == 1);  // pp 1
  const auto bad = fields("pp=2,vpp=3", 3);
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].find("layout.vpp: the model's 16 blocks do not split evenly into pp 2 x vpp 3 = 6") == 0);
  CHECK(bad[1].find("layout.vpp: interleaved 1F1B runs micro-batches in groups of pp: grad_accum 3") == 0);
  CHECK(fields("vpp=0", 4).front().find("layout.vpp: '0' is not a positive integer") == 0);
  CHECK(fields("pp=2,vpp=2147483647", 4).front().find("layout.vpp: the model's 16 blocks do not split evenly") == 0);
}

TEST_CASE("layout key dispatcher: nccl (default, not printed) or deepep (printed), anything else named") {
  auto l = workload::parse_parallel_layout("ep=4", kSrc);
  CHECK(l.dispatcher == workload::Dispatcher::kNccl);
  l = workload::parse_parallel_layout("ep=4,dispatcher=deepep", kSrc);
  workload::resolve_layout(l, 16, 8, model16(), kSrc);
  CHECK(l.dispatcher == workload::Dispatcher::kDeepEp);
  CHECK(workload::describe(l) == "tp=1,pp=1,dp=16,ep=4,sp=on,tp_span=node,dist_opt=on,recompute=none,"
                                 "overlap_grad_reduce=off,overlap_param_gather=off,dispatcher=deepep");
  // describe() parses back to the same layout.
  auto again = workload::parse_parallel_layout(workload::describe(l), kSrc);
  CHECK(again.dispatcher == workload::Dispatcher::kDeepEp);
  l = workload::parse_parallel_layout("ep=4,dispatcher=nccl", kSrc);
  workload::resolve_layout(l, 16, 8, model16(), kSrc);
  CHECK(workload::describe(l).find("dispatcher") == std::string::npos);
  CHECK(error_fields("dispatcher=deepp", 16, 8) == std::vector<std::string>{"layout.dispatcher"});
}

namespace {
// Every diagnostic of parse + resolve as "field: message", for the 16-block model on 16 GPUs.
std::vector<std::string> diagnostics(const std::string& text, int grad_accum = 8, int layers = 16) {
  std::vector<std::string> out;
  auto m = test::small_moe_model("m", 16, 2, 1024, 1, layers);
  m.grad_accum = grad_accum;
  try {
    auto l = workload::parse_parallel_layout(text, kSrc);
    workload::resolve_layout(l, 16, 8, m, kSrc);
  } catch (const InputError& e) {
    for (const auto& d : e.diagnostics()) out.push_back(d.field + ": " + d.message);
  }
  return out;
}
ParallelLayout resolved(const std::string& text, int grad_accum = 8, int layers = 16) {
  auto m = test::small_moe_model("m", 16, 2, 1024, 1, layers);
  m.grad_accum = grad_accum;
  auto l = workload::parse_parallel_layout(text, kSrc);
  workload::resolve_layout(l, 16, 8, m, kSrc);
  return l;
}
}  // namespace

TEST_CASE("Megatron's pipeline layout string: repetition, stages, uneven and interleaved") {
  std::string err;
  // DeepSeek-V3's PP16 VPP2 layout from Megatron-Core's docs: 32 virtual stages, 61 t's.
  const auto ds = workload::expand_pipeline_layout("Et*3|(tt|)*29,m|L", err);
  CHECK(err.empty());
  REQUIRE(ds.size() == 32);
  CHECK(ds[0] == "Ettt");
  CHECK(ds[29] == "tt");
  CHECK(ds[30] == "m");
  CHECK(ds[31] == "L");
  CHECK(workload::expand_pipeline_layout("E||t|L", err) == std::vector<std::string>{"E", "", "t", "L"});
  workload::expand_pipeline_layout("Et|(tt|*2", err);
  CHECK(err.find("'(' at character 4 has no ')'") == 0);
  workload::expand_pipeline_layout("Ex|L", err);
  CHECK(err.find("unknown symbol 'x'") == 0);
  // Uneven over 4 stages: 16 blocks as 3, 5, 5, 3 (the first stage also embeds, the last has the loss).
  auto l = resolved("pp=4,pipeline_layout=Ettt|(ttttt|)*2tttL");
  CHECK(l.vpp == 1);
  CHECK(l.chunk_blocks(0, 16) == std::pair{0, 3});
  CHECK(l.chunk_blocks(1, 16) == std::pair{3, 8});
  CHECK(l.chunk_blocks(3, 16) == std::pair{13, 16});
  CHECK(l.stage_of_block(7, 16) == 1);
  CHECK(workload::describe(l).find(",pipeline_layout=Ettt|(ttttt|)*2tttL") != std::string::npos);
  // With interleaving: 8 virtual stages on pp 4 give vpp 2 (Megatron derives it); uneven chunks.
  // Megatron's cosmetic commas are kept (they are not key separators inside the string).
  auto iv = resolved("pp=4,pipeline_layout=Et|(tt|)*3,(tt|)*3,tL", 8, 14);
  CHECK(iv.vpp == 2);
  CHECK(iv.schedule == workload::Schedule::kInterleaved);
  CHECK(iv.chunk_blocks(0, 14) == std::pair{0, 1});
  CHECK(iv.stage_block_ids(0, 14) == std::vector<int>{0, 7, 8});  // pieces 0 and 4
  CHECK(iv.stage_block_ids(3, 14) == std::vector<int>{5, 6, 13});  // pieces 3 and 7
  // Counts that do not add up name the field and what was expected.
  CHECK(diagnostics("pp=4,pipeline_layout=Ettt|(ttttt|)*2ttL") ==
        std::vector<std::string>{"layout.pipeline_layout: 15 transformer blocks (t) in the layout, the model has 16 (layers)"});
  CHECK(diagnostics("pp=4,pipeline_layout=Et|tt|tL").front().find(
            "layout.pipeline_layout: 3 virtual stages is not a multiple of pp 4") == 0);
  CHECK(diagnostics("pp=2,vpp=2,pipeline_layout=Et*8|t*8L").front().find("2 virtual stages = pp 2 x vpp 1, but vpp 2") !=
        std::string::npos);
  CHECK(diagnostics("pp=2,pipeline_layout=t*8|Et*8L").size() == 1);  // E not first
  // MTP layers (m): as many as the model's mtp_layers (none here), after every t.
  CHECK(diagnostics("pp=2,pipeline_layout=Et*8|t*8mL").back() ==
        "layout.pipeline_layout: 1 MTP layer(s) (m) in the layout, the model has 0 (mtp_layers)");
}

TEST_CASE("first/last stage layer counts: Megatron's decoder_first/last_pipeline_num_layers") {
  // 16 blocks, pp 4: first 2, last 2 -> the middle two stages share 12: 6 each.
  auto l = resolved("pp=4,first_stage_layers=2,last_stage_layers=2");
  CHECK(l.chunk_blocks(0, 16) == std::pair{0, 2});
  CHECK(l.chunk_blocks(1, 16) == std::pair{2, 8});
  CHECK(l.chunk_blocks(3, 16) == std::pair{14, 16});
  // Only the first: the other three share 13? Not divisible -> the error names the field.
  CHECK(diagnostics("pp=4,first_stage_layers=3") ==
        std::vector<std::string>{"layout.first_stage_layers: first_stage_layers 3 + last_stage_layers 0 leave 13 of the "
                                 "model's 16 blocks for the other 3 stage(s): expected a multiple of 3 (each takes the same)"});
  auto f = resolved("pp=4,first_stage_layers=1");  // 15 over 3: 5 each
  CHECK(f.chunk_blocks(1, 16) == std::pair{1, 6});
  // Interleaved: each stage's count splits over its vpp chunks (first 2 -> 1 + 1; middle 6 -> 3 + 3).
  auto iv = resolved("pp=4,vpp=2,first_stage_layers=2,last_stage_layers=2");
  CHECK(iv.chunk_blocks(0, 16) == std::pair{0, 1});
  CHECK(iv.chunk_blocks(1, 16) == std::pair{1, 4});
  CHECK(iv.chunk_blocks(4, 16) == std::pair{8, 9});
  CHECK(diagnostics("pp=4,vpp=2,first_stage_layers=3,last_stage_layers=1").front().find(
            "every stage's blocks must split evenly over its vpp 2 chunks") != std::string::npos);
  CHECK(diagnostics("pp=4,first_stage_layers=2,pipeline_layout=Et*4|t*4|t*4|t*4L").front().find(
            "give either pipeline_layout or first_stage_layers") != std::string::npos);
}

TEST_CASE("schedule key: defaults as before, combinations checked, DualPipe's two chunks per stage") {
  CHECK(resolved("pp=4").schedule == workload::Schedule::kOneFOneB);
  CHECK(resolved("pp=4,vpp=2").schedule == workload::Schedule::kInterleaved);
  // The default written out leaves the description as it was.
  CHECK(workload::describe(resolved("pp=4,schedule=1f1b")) == workload::describe(resolved("pp=4")));
  CHECK(workload::describe(resolved("pp=4,schedule=zb-h1")).find(",schedule=zb-h1") != std::string::npos);
  CHECK(diagnostics("pp=4,vpp=2,schedule=1f1b").front().find("layout.schedule: schedule=1f1b with vpp 2") == 0);
  CHECK(diagnostics("pp=4,schedule=interleaved").front().find("needs vpp >= 2") != std::string::npos);
  CHECK(diagnostics("pp=4,vpp=2,schedule=zb-h1").front().find("schedule=zb-h1 runs one model chunk per stage") !=
        std::string::npos);
  CHECK(diagnostics("pp=4,schedule=fast").front().find("'fast' is not 1f1b, interleaved, zb-h1 or dualpipe") !=
        std::string::npos);
  // DualPipe: even pp, an even number of micro-batches >= 2 pp.
  CHECK(diagnostics("pp=4,schedule=dualpipe", 6).front().find("at least 2 x pp = 8") != std::string::npos);
  CHECK(diagnostics("pp=8,schedule=dualpipe", 16, 16).empty());
  auto d = resolved("pp=4,schedule=dualpipe");
  CHECK(d.pieces() == 4);
  CHECK(d.stage_chunks() == 2);
  // Stage 0 holds pieces 0 and 3 (blocks 0-3 and 12-15), stage 2 pieces 2 and 1.
  CHECK(d.stage_block_ids(0, 16) == std::vector<int>{0, 1, 2, 3, 12, 13, 14, 15});
  CHECK(d.stage_block_ids(2, 16) == std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(d.piece_of(2, 1) == 1);
  // 16 GPUs, pp 4: dp 4 per stage (GPUs 4s .. 4s + 3). Stage s and its mirror 3 - s hold the same
  // pieces, so their 2 x 4 ranks are one DP group, listed once from the lower stage; with ep 2 the
  // expert-DP groups stride by 2 inside each of the two stages (edp 2 per stage, 4 per group).
  CHECK(d.piece_copies() == 2);
  CHECK(d.dp_owner_stage(3) == 0);
  CHECK(d.copy_stages(2) == std::vector<int>{2, 1});
  CHECK(d.dp_groups() == std::vector<std::vector<int>>{{0, 1, 2, 3, 12, 13, 14, 15}, {4, 5, 6, 7, 8, 9, 10, 11}});
  auto de = resolved("pp=4,ep=2,schedule=dualpipe");
  CHECK(de.edp_groups() ==
        std::vector<std::vector<int>>{{0, 2, 12, 14}, {1, 3, 13, 15}, {4, 6, 8, 10}, {5, 7, 9, 11}});
  CHECK(resolved("pp=4").dp_groups().size() == 4);  // one stage each without DualPipe
  CHECK(resolved("pp=4").piece_copies() == 1);
  auto dl = resolved("pp=4,schedule=dualpipe,pipeline_layout=Ettt|t*5|t*5|tttL");
  CHECK(dl.chunk_blocks(1, 16) == std::pair{3, 8});
  CHECK(diagnostics("pp=4,schedule=dualpipe,pipeline_layout=Et|(tt|)*6,tL").front().find(
            "8 virtual stages for schedule=dualpipe with pp 4") != std::string::npos);
}

TEST_CASE("MTP blocks: after the main model's, on the last piece unless a pipeline_layout places them") {
  // 16 blocks and one MTP module (block 16, MoE like block 15), pp 4.
  auto m = test::small_moe_model("m", 16, 2, 1024, 1, 16);
  m.mtp_layers = 1;
  m.moe_layer_ids.push_back(16);
  auto resolve = [&](const std::string& text) {
    auto l = workload::parse_parallel_layout(text, kSrc);
    workload::resolve_layout(l, 16, 8, m, kSrc);
    return l;
  };
  // Even split of the 16 main blocks (4 each), the MTP block joins the last piece: [12, 17).
  auto even = resolve("pp=4");
  CHECK(even.chunk_blocks(0, 16, 1) == std::pair{0, 4});
  CHECK(even.chunk_blocks(3, 16, 1) == std::pair{12, 17});
  CHECK(even.stage_of_block(16, 16, 1) == 3);
  // First / last stage counts: the last stage's 2 blocks and the MTP block.
  auto fl = resolve("pp=4,first_stage_layers=2,last_stage_layers=2");
  CHECK(fl.chunk_blocks(3, 16, 1) == std::pair{14, 17});
  // A pipeline_layout counts m as a block of its virtual stage: here one of its own before L's.
  auto pl = resolve("pp=4,pipeline_layout=Etttt|tttttt|tttttt|mL");
  CHECK(pl.chunk_blocks(2, 16, 1) == std::pair{10, 16});
  CHECK(pl.chunk_blocks(3, 16, 1) == std::pair{16, 17});
  // Wrong count, or an m before a t: the field and what was expected.
  CHECK_THROWS_WITH_AS(resolve("pp=4,pipeline_layout=Etttt|tttttt|tttttt|L"),
                       doctest::Contains("0 MTP layer(s) (m) in the layout, the model has 1 (mtp_layers)"), InputError);
  CHECK_THROWS_WITH_AS(resolve("pp=4,pipeline_layout=Etttt|tttttt|ttttt|mtL"),
                       doctest::Contains("must follow every transformer block"), InputError);
}
