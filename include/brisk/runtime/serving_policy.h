// A serving policy file: the batching parameters `brisk tune` moves (batch size, preferred multiple, queue delay,
// executors, batches in flight, compute threads, token budget, predicted-late refusal) as JSON, with a record of how
// they were tuned. The runtime (RuntimeOptions::policy_path), the C API (brisk_runtime_options.policy_path), the CLI
// (--policy FILE) and the HTTP example load it; its values override the options' batching and num_threads.
//
//   BRISK_ASSIGN_OR_RETURN(brisk::ServingPolicy policy, brisk::read_policy_file("policy.json"));
//   brisk::RuntimeOptions opts;
//   opts.model_dir = "/models/all-MiniLM-L6-v2";
//   BRISK_RETURN_IF_ERROR(brisk::apply_policy(policy, opts));   // or just: opts.policy_path = "policy.json";
//
// The file (every parameter optional: one that is absent leaves the options' value; unknown keys are refused):
//   {"format": "brisk-serving-policy", "version": 1,
//    "max_batch_size": 16, "preferred_batch_multiple": 4, "max_queue_delay_ms": 2, "executor_threads": 1,
//    "max_inflight_batches": 0, "num_threads": 2, "max_batch_tokens": 8192, "reject_predicted_late": true,
//    "provenance": {"tool": "brisk tune", "rate_per_s": 40, "slo_p99_ms": 50, "mix": "faq", ...}}
//
// Thread safety: plain values and free functions; any thread may call them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/runtime/runtime.h"

namespace brisk {

inline constexpr int kPolicyFileVersion = 1;
// Upper bounds a policy file may hold beyond those of runtime.h (kMaxBatchSize, kMaxThreads).
inline constexpr double kMaxPolicyQueueDelayMs = 60'000;          // max_queue_delay_ms
inline constexpr int kMaxPolicyExecutorThreads = 256;             // as BatchPolicy::validate
inline constexpr size_t kMaxPolicyBatchTokens = size_t{1} << 30;  // max_batch_tokens

// How a policy was found: what `brisk tune` measured, so that a reader can tell which traffic it fits. Numbers are
// nullopt when unknown (a policy written by hand).
struct PolicyProvenance {
  std::string tool;                      // "brisk tune"
  std::string brisk_version;             // the library's version
  std::string date;                      // ISO 8601, UTC
  std::string model;                     // the model directory or file
  std::string mix;                       // the traffic mix: "faq", "mixed" or a file
  std::optional<double> rate_per_s;      // offered Poisson rate
  std::optional<double> slo_p99_ms;      // the P99 target
  std::optional<double> duration_s;      // per evaluation
  std::optional<double> p50_ms, p99_ms;  // the chosen policy's, in the final interleaved comparison
  std::optional<double> goodput_per_s;   // completed within the SLO, per second
  std::optional<double> refused_share;   // refused at submit or expired, of offered
  std::optional<double> defaults_p50_ms, defaults_p99_ms, defaults_goodput_per_s, defaults_refused_share;
  std::optional<double> load_average;  // the machine's 1-minute load average when tuned
  std::optional<double> candidates;    // evaluations the search ran
};

struct ServingPolicy {
  std::optional<size_t> max_batch_size;            // 1 to kMaxBatchSize
  std::optional<size_t> preferred_batch_multiple;  // 1 (off) to max_batch_size
  std::optional<double> max_queue_delay_ms;        // 0 to kMaxPolicyQueueDelayMs
  std::optional<int> executor_threads;             // 1 to kMaxPolicyExecutorThreads
  std::optional<int> max_inflight_batches;         // 0 (= executor_threads) to executor_threads
  std::optional<int> num_threads;                  // RuntimeOptions::num_threads: 0 to kMaxThreads
  std::optional<size_t> max_batch_tokens;          // 0 (unlimited) to kMaxPolicyBatchTokens
  std::optional<bool> reject_predicted_late;
  PolicyProvenance provenance;
};

// Parses a policy file's text. `source` names it in errors ("policy.json: max_batch_size is 0; expected 1 to 4096").
// Refuses unknown keys (naming them), values of the wrong type, and values out of range.
BRISK_API StatusOr<ServingPolicy> parse_policy_json(const std::string& text, const std::string& source = "policy");
// Reads and parses a file; NOT_FOUND naming it when it cannot be opened; files over 1 MiB are refused.
BRISK_API StatusOr<ServingPolicy> read_policy_file(const std::string& path);
// The JSON text of a policy (pretty-printed); parse_policy_json() reads it back unchanged.
BRISK_API std::string policy_to_json(const ServingPolicy& policy);
// Writes policy_to_json() to `path` (replacing it); errors name the file.
BRISK_API Status write_policy_file(const ServingPolicy& policy, const std::string& path);
// The policy's parameters from options (every one set), with an empty provenance.
BRISK_API ServingPolicy policy_of(const RuntimeOptions& options);
// Overrides options.batching and options.num_threads with the policy's parameters that are set, then checks the
// result (BatchPolicy::validate and the kMax* limits); on an error the options are left unchanged.
BRISK_API Status apply_policy(const ServingPolicy& policy, RuntimeOptions& options);
// When options.policy_path is set: reads it and applies it (errors name the file), and clears policy_path.
// Runtime::create calls this.
BRISK_API Status load_policy_path(RuntimeOptions& options);

}  // namespace brisk
