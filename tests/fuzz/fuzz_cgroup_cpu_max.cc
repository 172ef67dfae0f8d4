// libFuzzer target: a cgroup v2 cpu.max file's text (brisk/core/parallel.h, what num_threads = 0 reads).
// Invariants: cpus_of_cgroup_cpu_max either fails with INVALID_ARGUMENT, a message that names the expected form and
// stays short, or gives 0 (no quota) or a CPU count >= 1 that is quota / period rounded up, recomputed here from the
// same two numbers.
#include <charconv>
#include <string>

#include "brisk/core/parallel.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const brisk::StatusOr<int> cpus = brisk::cpus_of_cgroup_cpu_max(text);
  if (!cpus.ok()) {
    const std::string message(cpus.status().message());
    if (cpus.status().code() != absl::StatusCode::kInvalidArgument) {
      brisk_fuzz::invariant_failed("an error other than INVALID_ARGUMENT", message);
    }
    if (message.find("expected \"<quota|max> <period>\"") == std::string::npos) {
      brisk_fuzz::invariant_failed("the message does not name the expected form", message);
    }
    if (message.size() > 256) brisk_fuzz::invariant_failed("message longer than 256 bytes", message);
    return 0;
  }
  if (*cpus < 0) brisk_fuzz::invariant_failed("a negative CPU count", std::string(text));
  // Independent reading: the first two space-separated fields after trailing newlines and spaces are dropped.
  std::string_view t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.remove_suffix(1);
  const std::string_view quota = t.substr(0, t.find(' '));
  if (quota == "max") {
    if (*cpus != 0) brisk_fuzz::invariant_failed("\"max\" gave a quota", std::string(text));
    return 0;
  }
  const std::string_view period = t.substr(t.find(' ') + 1);
  int64_t q = 0, p = 0;
  std::from_chars(quota.data(), quota.data() + quota.size(), q);
  std::from_chars(period.data(), period.data() + period.size(), p);
  if (q <= 0 || p <= 0) brisk_fuzz::invariant_failed("accepted a non-positive quota or period", std::string(text));
  const int64_t expected = std::min<int64_t>(q / p + (q % p != 0 ? 1 : 0), 1 << 20);
  if (*cpus != expected) brisk_fuzz::invariant_failed("not quota / period rounded up", std::string(text));
  return 0;
}
