// libFuzzer target: the serving policy file (brisk tune writes it; an operator may edit it; the runtime, the C API,
// the CLI and the HTTP example read it). A policy that parses must survive a JSON round trip unchanged and either
// apply to default RuntimeOptions or be refused with a message.
#include "brisk/runtime/serving_policy.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto policy = brisk::parse_policy_json(text, "policy.json");
  if (!policy.ok()) {
    if (policy.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  const std::string json = brisk::policy_to_json(*policy);
  auto again = brisk::parse_policy_json(json, "round trip");
  if (!again.ok() || brisk::policy_to_json(*again) != json) {
    brisk_fuzz::invariant_failed("a parsed policy does not survive a JSON round trip");
  }
  brisk::RuntimeOptions options;
  const brisk::Status applied = brisk::apply_policy(*policy, options);
  if (!applied.ok() && applied.message().empty()) brisk_fuzz::invariant_failed("apply_policy failed without a message");
  if (applied.ok() && !options.batching.validate().ok()) {
    brisk_fuzz::invariant_failed("apply_policy accepted a policy the batcher refuses");
  }
  return 0;
}
