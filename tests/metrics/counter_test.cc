// Tests of Counter, Gauge and DoubleGauge, alone and under concurrent updates.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "brisk/metrics/counter.h"

using brisk::metrics::Counter;
using brisk::metrics::DoubleGauge;
using brisk::metrics::Gauge;

TEST_CASE("Counter, Gauge and DoubleGauge start at zero and move as told", "[metrics]") {
  Counter c;
  CHECK(c.value() == 0);
  c.add();
  c.add(41);
  CHECK(c.value() == 42);

  Gauge g;
  g.set(10);
  g.add(-15);
  CHECK(g.value() == -5);

  DoubleGauge d;
  d.set(0.25);
  d.add(0.5);
  CHECK(d.value() == 0.75);
}

TEST_CASE("Counter and gauges total exactly under concurrent updates", "[metrics]") {
  Counter c;
  Gauge g;
  DoubleGauge d;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        c.add(2);
        g.add(i % 2 == 0 ? 3 : -1);
        d.add(0.5);  // exactly representable: the total is exact too
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(c.value() == 8u * 20000u * 2u);
  CHECK(g.value() == 8 * 10000 * 2);
  CHECK(d.value() == 8 * 20000 * 0.5);
}
