// Every strategy knob against its one declaration (the registry row): the strategy reads the row's
// default, so naming a knob at its default changes nothing; every value `tune` tries builds; a
// value outside the domain is refused naming the strategy and knob; a knob the row does not
// declare is refused listing the ones it does.
#include <doctest/doctest.h>

#include <string>

#include "strategy/knobs.hpp"
#include "strategy/strategy.hpp"
#include "support/test_platforms.hpp"
#include "util/diagnostics.hpp"

using namespace hs;

namespace {
// 8 GPUs, 16 experts (2 per GPU: SmartMoE and FlexMoE apply), hot experts 0 and 1.
struct Setup {
  workload::ModelSpec m = test::small_moe_model("m16", 16, 2, 1024, 2);
  topology::Topology t = test::node8();
  cost::ComputeCost cc{t.gpu_model(), m};
  strategy::Context ctx{t, m, cc, 1};
  std::vector<double> loads = [&] {
    auto l = test::uniform_loads(m.moe_layers(), 8, 16, 4096);
    for (size_t i = 0; i < l.size(); i += 16) l[i] *= 6, l[i + 1] *= 3;
    return l;
  }();
  double run(const std::string& spec, int iterations = 3) {
    auto s = strategy::make_strategy(strategy::parse_strategy_spec(spec), ctx);
    double last = 0;
    for (int i = 0; i < iterations; ++i) last = s->simulate(loads).time;
    return last;
  }
};
}  // namespace

TEST_CASE("registry: every knob read from its one declaration") {
  Setup su;
  for (const auto& row : strategy::registry()) {
    const double plain = su.run(row.name);
    for (const auto& k : row.knobs) {
      INFO(row.name, ":", k.name, " default ", k.value);
      // The declared default is in its own domain, and giving it changes nothing (the strategy
      // holds no second default).
      CHECK_FALSE(k.domain.check(k.value).has_value());
      CHECK(su.run(std::string(row.name) + ":" + k.name + "=" + k.value) == plain);
      // KnobValues fills it in when absent.
      CHECK(strategy::KnobValues(row, {}).text(k.name) == k.value);
      // Every value tune tries builds and runs.
      for (const auto& v : k.domain.candidates()) {
        INFO("candidate ", v);
        CHECK_NOTHROW(su.run(std::string(row.name) + ":" + k.name + "=" + v, 1));
      }
      // A value outside the domain is bad input naming the knob.
      try {
        su.run(std::string(row.name) + ":" + k.name + "=-7.5x", 1);
        FAIL("accepted ", row.name, ":", k.name, "=-7.5x");
      } catch (const InputError& e) {
        CHECK(std::string(e.what()).find(std::string(row.name) + ":" + k.name) != std::string::npos);
      }
    }
    try {
      su.run(std::string(row.name) + ":no_such_knob=1", 1);
      FAIL("accepted ", row.name, ":no_such_knob");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("has no knob 'no_such_knob'") != std::string::npos);
    }
  }
}

TEST_CASE("registry: a knob the row does not declare is a bug, not a default") {
  const auto* row = strategy::find_strategy("fssdp");
  REQUIRE(row != nullptr);
  strategy::KnobValues v(*row, {{"window", "7"}});
  CHECK(v.integer("window") == 7);
  CHECK(v.text("comm_queue") == "single");  // the row's default
  CHECK_THROWS_AS(v.text("windw"), std::logic_error);
  CHECK_THROWS_AS(strategy::KnobValues(*row, {{"windw", "7"}}), std::logic_error);
}
