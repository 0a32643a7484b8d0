#include "util/progress.hpp"

#include <cstdio>
#include <cstdlib>
#include <doctest/doctest.h>
#include <string>

namespace {
// Progress written to a memory stream, driven by a clock the test sets.
struct Capture {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  double now = 0;
  hs::Progress::Clock clock() {
    return [this] { return now; };
  }
  std::string text() {
    std::fflush(f);
    return std::string(buf, size);
  }
  ~Capture() {
    std::fclose(f);
    free(buf);
  }
};
size_t count(const std::string& s, char c) {
  size_t n = 0;
  for (char x : s) n += x == c;
  return n;
}
}  // namespace

TEST_CASE("progress: nothing before the delay, nothing when quiet") {
  Capture c;
  {
    hs::Progress p("run", "iterations", 100, {false, 2, false}, c.f, c.clock());
    c.now = 1;
    p.update(10, "strategy ep");
    CHECK(c.text().empty());
    c.now = 2.5;
    p.update(20, "strategy ep");
    CHECK(c.text() == "run: 20/100 iterations (20%), 8 iterations/s, ETA 10 s, strategy ep\n");
  }
  Capture q;
  {
    hs::Progress p("run", "iterations", 100, {true, 0, false}, q.f, q.clock());
    for (int i = 1; i <= 100; ++i) q.now = i, p.update(i), p.step("x");
  }
  CHECK(q.text().empty());
}

TEST_CASE("progress into a pipe: a line per tenth and per step, not per unit") {
  Capture c;
  {
    hs::Progress p("run", "iterations", 1000, {false, 0, false}, c.f, c.clock());
    for (int i = 1; i <= 1000; ++i) {
      c.now = i * 1e-3;
      p.update(i, "strategy ep");
    }
    p.step("strategy ep finished (1 of 1)");
  }
  const std::string t = c.text();
  CHECK(count(t, '\n') == 12);  // the first, each tenth, the step
  CHECK(count(t, '\r') == 0);
  CHECK(t.find("run: 1000/1000 iterations (100%)") != std::string::npos);
  CHECK(t.find("\nrun: strategy ep finished (1 of 1)\n") != std::string::npos);
}

TEST_CASE("progress on a terminal: redrawn in place, the line ended at the end") {
  Capture c;
  {
    hs::Progress p("collective", "sizes", 0, {false, 0, true}, c.f, c.clock());
    for (int i = 1; i <= 50; ++i) {
      c.now = i * 0.0625;  // exact in binary: a redraw every second update
      p.update(i);
    }
  }
  const std::string t = c.text();
  CHECK(count(t, '\r') == 25);  // at most ten redraws a second
  CHECK(count(t, '\n') == 1);
  CHECK(t.back() == '\n');
  CHECK(t.find("ETA") == std::string::npos);  // no total, no ETA
  Capture n;
  {
    hs::Progress p("sweep", "points", 10, {false, 0, true, 20}, n.f, n.clock());
    n.now = 1;
    p.update(1, "best 1.234 ms fssdp:overlap_degree=2");
  }
  CHECK(n.text() == "\r\033[Ksweep: 1/10 points \n");  // cut to the terminal's 20 columns, less one
}

TEST_CASE("durations") {
  CHECK(hs::format_duration(12.4) == "12 s");
  CHECK(hs::format_duration(200) == "3 min 20 s");
  CHECK(hs::format_duration(7500) == "2 h 05 min");
}
