// libFuzzer target: the batch service-time curve file of `brisk plan --bench` (brisk/batch/capacity.h). A curve
// that parses must validate, survive a JSON round trip unchanged, and drive a short simulation without error.
#include <cmath>

#include "brisk/batch/capacity.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto curve = brisk::batch::ServiceCurve::from_json(text, "curve.json");
  if (!curve.ok()) {
    if (curve.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  if (!curve->validate("parsed").ok()) brisk_fuzz::invariant_failed("a parsed curve does not validate");
  auto again = brisk::batch::ServiceCurve::from_json(curve->to_json(), "round trip");
  if (!again.ok() || again->batch_ms != curve->batch_ms || again->jitter_cv != curve->jitter_cv) {
    brisk_fuzz::invariant_failed("a parsed curve does not survive a JSON round trip");
  }
  brisk::batch::SimulationOptions options;
  options.requests = 200;
  options.warmup_requests = 0;
  options.replicas = 2;
  const double rate = 0.5 * 2 * curve->replica_capacity();  // half the fleet's capacity: always stable
  if (rate > 0 && std::isfinite(rate)) {
    auto sim = brisk::batch::simulate_batching(*curve, rate, options);
    if (!sim.ok()) brisk_fuzz::invariant_failed("a valid curve fails to simulate");
  }
  return 0;
}
