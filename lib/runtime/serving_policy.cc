// The serving policy file: JSON parsing with range checks, writing, and applying it to RuntimeOptions.
#include "brisk/runtime/serving_policy.h"
#include "brisk/core/internal/bounded_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <vector>

namespace brisk {

namespace {

using nlohmann::json;

constexpr size_t kMaxPolicyFileBytes = size_t{1} << 20;
constexpr size_t kMaxProvenanceString = 4096;
constexpr const char* kFormat = "brisk-serving-policy";

// A JSON value's short description for messages: its text, cut when long.

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Status bad(std::string_view key, const json& value, std::string_view expected) const {
    return absl::InvalidArgumentError(
        fmt::format("{}: {} is {}; expected {}", source_, key, shown_json(value), expected));
  }

  // An integer in [lo, hi].
  template <typename T>
  Status integer(const json& o, const char* key, std::optional<T>& out, int64_t lo, uint64_t hi,
                 std::string_view expected) const {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    if (it->is_number_unsigned()) {
      const uint64_t v = it->get<uint64_t>();
      if (v > hi || (lo > 0 && v < static_cast<uint64_t>(lo))) return bad(key, *it, expected);
      out = static_cast<T>(v);
      return absl::OkStatus();
    }
    if (it->is_number_integer()) {  // negative
      const int64_t v = it->get<int64_t>();
      if (v < lo || (v >= 0 && static_cast<uint64_t>(v) > hi)) return bad(key, *it, expected);
      out = static_cast<T>(v);
      return absl::OkStatus();
    }
    return bad(key, *it, expected);
  }

  Status number(const json& o, const char* key, std::optional<double>& out, double lo, double hi,
                std::string_view expected, std::string_view where = "") const {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    const std::string name = std::string(where) + key;
    if (!it->is_number()) return bad(name, *it, expected);
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < lo || v > hi) return bad(name, *it, expected);
    out = v;
    return absl::OkStatus();
  }

  Status boolean(const json& o, const char* key, std::optional<bool>& out) const {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    if (!it->is_boolean()) return bad(key, *it, "true or false");
    out = it->get<bool>();
    return absl::OkStatus();
  }

  Status string(const json& o, const char* key, std::string& out, std::string_view where) const {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    const std::string name = std::string(where) + key;
    if (!it->is_string()) return bad(name, *it, "a string");
    out = it->get<std::string>();
    if (out.size() > kMaxProvenanceString) {
      return bad(name, json(fmt::format("{} bytes long", out.size())),
                 fmt::format("at most {} bytes", kMaxProvenanceString));
    }
    return absl::OkStatus();
  }

  // Every key of `o` must be one of `known`.
  Status known_keys(const json& o, const std::vector<std::string_view>& known, std::string_view where) const {
    std::vector<std::string> unknown;
    for (const auto& [key, value] : o.items()) {
      bool found = false;
      for (std::string_view k : known) found = found || key == k;
      if (!found) unknown.push_back(json(key).dump(-1, ' ', true, json::error_handler_t::replace));
    }
    if (unknown.empty()) return absl::OkStatus();
    std::string list;
    for (size_t i = 0; i < unknown.size() && i < 8; ++i) list += (i ? ", " : "") + unknown[i];
    if (unknown.size() > 8) list += fmt::format(" and {} more", unknown.size() - 8);
    std::string expected;
    for (size_t i = 0; i < known.size(); ++i) expected += (i ? ", " : "") + std::string(known[i]);
    return absl::InvalidArgumentError(fmt::format("{}: unknown key{} {}{}; expected only {}", source_,
                                                  unknown.size() > 1 ? "s" : "", list,
                                                  where.empty() ? "" : fmt::format(" in {}", where), expected));
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

const std::vector<std::string_view> kTopKeys = {"format",
                                                "version",
                                                "max_batch_size",
                                                "preferred_batch_multiple",
                                                "max_queue_delay_ms",
                                                "executor_threads",
                                                "max_inflight_batches",
                                                "num_threads",
                                                "max_batch_tokens",
                                                "reject_predicted_late",
                                                "provenance"};

struct NumberField {
  const char* key;
  std::optional<double> PolicyProvenance::*field;
};
const std::vector<NumberField>& provenance_numbers() {
  static const std::vector<NumberField> fields = {
      {"rate_per_s", &PolicyProvenance::rate_per_s},
      {"slo_p99_ms", &PolicyProvenance::slo_p99_ms},
      {"duration_s", &PolicyProvenance::duration_s},
      {"p50_ms", &PolicyProvenance::p50_ms},
      {"p99_ms", &PolicyProvenance::p99_ms},
      {"goodput_per_s", &PolicyProvenance::goodput_per_s},
      {"refused_share", &PolicyProvenance::refused_share},
      {"defaults_p50_ms", &PolicyProvenance::defaults_p50_ms},
      {"defaults_p99_ms", &PolicyProvenance::defaults_p99_ms},
      {"defaults_goodput_per_s", &PolicyProvenance::defaults_goodput_per_s},
      {"defaults_refused_share", &PolicyProvenance::defaults_refused_share},
      {"load_average", &PolicyProvenance::load_average},
      {"candidates", &PolicyProvenance::candidates},
  };
  return fields;
}

struct StringField {
  const char* key;
  std::string PolicyProvenance::*field;
};
const std::vector<StringField>& provenance_strings() {
  static const std::vector<StringField> fields = {
      {"tool", &PolicyProvenance::tool}, {"brisk_version", &PolicyProvenance::brisk_version},
      {"date", &PolicyProvenance::date}, {"model", &PolicyProvenance::model},
      {"mix", &PolicyProvenance::mix},
  };
  return fields;
}

Status parse_provenance(const Reader& r, const json& o, PolicyProvenance& p) {
  if (!o.is_object()) return r.bad("provenance", o, "an object");
  std::vector<std::string_view> known;
  for (const auto& f : provenance_strings()) known.push_back(f.key);
  for (const auto& f : provenance_numbers()) known.push_back(f.key);
  BRISK_RETURN_IF_ERROR(r.known_keys(o, known, "provenance"));
  for (const auto& f : provenance_strings()) BRISK_RETURN_IF_ERROR(r.string(o, f.key, p.*f.field, "provenance."));
  for (const auto& f : provenance_numbers()) {
    BRISK_RETURN_IF_ERROR(
        r.number(o, f.key, p.*f.field, 0, std::numeric_limits<double>::max(), "a finite number >= 0", "provenance."));
  }
  return absl::OkStatus();
}

// Relations between the parameters (each one's own range is checked as it is read).
Status check_relations(const ServingPolicy& p, const std::string& source) {
  if (p.max_batch_size && p.preferred_batch_multiple && *p.preferred_batch_multiple > *p.max_batch_size) {
    return absl::InvalidArgumentError(
        fmt::format("{}: preferred_batch_multiple is {}; expected 1 to max_batch_size ({})", source,
                    *p.preferred_batch_multiple, *p.max_batch_size));
  }
  if (p.executor_threads && p.max_inflight_batches && *p.max_inflight_batches > *p.executor_threads) {
    return absl::InvalidArgumentError(
        fmt::format("{}: max_inflight_batches is {}; expected 0 (= executor_threads) to executor_threads ({})", source,
                    *p.max_inflight_batches, *p.executor_threads));
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<ServingPolicy> parse_policy_json(const std::string& text, const std::string& source) {
  const Reader r(source);
  BRISK_ASSIGN_OR_RETURN(const json j, parse_json_bounded(text, source));
  if (!j.is_object()) return r.bad("the document", j, "a JSON object (a brisk serving policy)");
  BRISK_RETURN_IF_ERROR(r.known_keys(j, kTopKeys, ""));
  if (auto it = j.find("format"); it != j.end() && (!it->is_string() || it->get<std::string>() != kFormat)) {
    return r.bad("format", *it, fmt::format("\"{}\"", kFormat));
  }
  if (auto it = j.find("version");
      it != j.end() && !(it->is_number_integer() && it->get<int64_t>() == kPolicyFileVersion)) {
    return r.bad("version", *it,
                 fmt::format("{} (this library reads version {} files)", kPolicyFileVersion, kPolicyFileVersion));
  }
  ServingPolicy p;
  BRISK_RETURN_IF_ERROR(r.integer(j, "max_batch_size", p.max_batch_size, 1, kMaxBatchSize,
                                  fmt::format("an integer, 1 to {}", kMaxBatchSize)));
  BRISK_RETURN_IF_ERROR(r.integer(j, "preferred_batch_multiple", p.preferred_batch_multiple, 1, kMaxBatchSize,
                                  "an integer, 1 (off) to max_batch_size"));
  BRISK_RETURN_IF_ERROR(r.number(j, "max_queue_delay_ms", p.max_queue_delay_ms, 0, kMaxPolicyQueueDelayMs,
                                 fmt::format("milliseconds, 0 to {}", kMaxPolicyQueueDelayMs)));
  BRISK_RETURN_IF_ERROR(r.integer(j, "executor_threads", p.executor_threads, 1, kMaxPolicyExecutorThreads,
                                  fmt::format("an integer, 1 to {}", kMaxPolicyExecutorThreads)));
  BRISK_RETURN_IF_ERROR(r.integer(j, "max_inflight_batches", p.max_inflight_batches, 0, kMaxPolicyExecutorThreads,
                                  "an integer, 0 (= executor_threads) to executor_threads"));
  BRISK_RETURN_IF_ERROR(r.integer(j, "num_threads", p.num_threads, 0, kMaxThreads,
                                  fmt::format("an integer, 0 (the CPUs this process may use) to {}", kMaxThreads)));
  BRISK_RETURN_IF_ERROR(r.integer(j, "max_batch_tokens", p.max_batch_tokens, 0, kMaxPolicyBatchTokens,
                                  fmt::format("an integer, 0 (unlimited) to {}", kMaxPolicyBatchTokens)));
  BRISK_RETURN_IF_ERROR(r.boolean(j, "reject_predicted_late", p.reject_predicted_late));
  if (auto it = j.find("provenance"); it != j.end()) BRISK_RETURN_IF_ERROR(parse_provenance(r, *it, p.provenance));
  BRISK_RETURN_IF_ERROR(check_relations(p, source));
  return p;
}

StatusOr<ServingPolicy> read_policy_file(const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(std::string text,
                         read_text_file_bounded(path, static_cast<int64_t>(kMaxPolicyFileBytes),
                                                "serving policy (a JSON file written by brisk tune)"));
  return parse_policy_json(text, "policy file '" + path + "'");
}

std::string policy_to_json(const ServingPolicy& p) {
  json j = json::object();
  j["format"] = kFormat;
  j["version"] = kPolicyFileVersion;
  if (p.max_batch_size) j["max_batch_size"] = *p.max_batch_size;
  if (p.preferred_batch_multiple) j["preferred_batch_multiple"] = *p.preferred_batch_multiple;
  if (p.max_queue_delay_ms) j["max_queue_delay_ms"] = *p.max_queue_delay_ms;
  if (p.executor_threads) j["executor_threads"] = *p.executor_threads;
  if (p.max_inflight_batches) j["max_inflight_batches"] = *p.max_inflight_batches;
  if (p.num_threads) j["num_threads"] = *p.num_threads;
  if (p.max_batch_tokens) j["max_batch_tokens"] = *p.max_batch_tokens;
  if (p.reject_predicted_late) j["reject_predicted_late"] = *p.reject_predicted_late;
  json prov = json::object();
  for (const auto& f : provenance_strings()) {
    if (!(p.provenance.*f.field).empty()) prov[f.key] = p.provenance.*f.field;
  }
  for (const auto& f : provenance_numbers()) {
    if (p.provenance.*f.field) prov[f.key] = *(p.provenance.*f.field);
  }
  if (!prov.empty()) j["provenance"] = prov;
  return j.dump(2, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace) + "\n";
}

Status write_policy_file(const ServingPolicy& policy, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(fmt::format("policy file '{}' cannot be written", path));
  out << policy_to_json(policy);
  out.close();
  if (!out) return absl::DataLossError(fmt::format("policy file '{}': the write failed", path));
  return absl::OkStatus();
}

ServingPolicy policy_of(const RuntimeOptions& options) {
  const batch::BatchPolicy& b = options.batching;
  ServingPolicy p;
  p.max_batch_size = b.max_batch_size;
  p.preferred_batch_multiple = b.preferred_batch_multiple;
  p.max_queue_delay_ms = std::chrono::duration<double, std::milli>(b.max_queue_delay).count();
  p.executor_threads = b.executor_threads;
  p.max_inflight_batches = b.max_inflight_batches;
  p.num_threads = options.num_threads;
  p.max_batch_tokens = b.max_batch_tokens;
  p.reject_predicted_late = b.reject_predicted_late;
  return p;
}

Status apply_policy(const ServingPolicy& p, RuntimeOptions& options) {
  RuntimeOptions o = options;
  batch::BatchPolicy& b = o.batching;
  if (p.max_batch_size) b.max_batch_size = *p.max_batch_size;
  if (p.preferred_batch_multiple) b.preferred_batch_multiple = *p.preferred_batch_multiple;
  // A bound the policy does not hold follows the one it does, so that a file with only "max_batch_size": 4 is not
  // refused for the default preferred_batch_multiple 8, a field it never named.
  if (p.max_batch_size && !p.preferred_batch_multiple && *p.max_batch_size >= 1) {
    b.preferred_batch_multiple = std::min(b.preferred_batch_multiple, b.max_batch_size);
  }
  if (p.max_queue_delay_ms) {
    b.max_queue_delay = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double, std::milli>(std::clamp(*p.max_queue_delay_ms, 0.0, kMaxPolicyQueueDelayMs)));
  }
  if (p.executor_threads) b.executor_threads = *p.executor_threads;
  if (p.max_inflight_batches) b.max_inflight_batches = *p.max_inflight_batches;
  if (p.executor_threads && !p.max_inflight_batches) {
    b.max_inflight_batches = std::min(b.max_inflight_batches, b.executor_threads);
  }
  if (p.num_threads) o.num_threads = *p.num_threads;
  if (p.max_batch_tokens) b.max_batch_tokens = *p.max_batch_tokens;
  if (p.reject_predicted_late) b.reject_predicted_late = *p.reject_predicted_late;
  // The same checks as a file gets, on the merged values (a policy built in code skips parse_policy_json).
  const ServingPolicy merged = policy_of(o);
  auto fail = [](const std::string& what) { return absl::InvalidArgumentError("serving policy: " + what); };
  if (*merged.max_batch_size < 1 || *merged.max_batch_size > kMaxBatchSize) {
    return fail(fmt::format("max_batch_size is {}; expected 1 to {}", *merged.max_batch_size, kMaxBatchSize));
  }
  if (*merged.preferred_batch_multiple < 1 || *merged.preferred_batch_multiple > *merged.max_batch_size) {
    return fail(fmt::format("preferred_batch_multiple is {}; expected 1 to max_batch_size ({})",
                            *merged.preferred_batch_multiple, *merged.max_batch_size));
  }
  if (*merged.num_threads < 0 || *merged.num_threads > kMaxThreads) {
    return fail(fmt::format("num_threads is {}; expected 0 (the CPUs this process may use) to {}", *merged.num_threads,
                            kMaxThreads));
  }
  if (*merged.max_inflight_batches > *merged.executor_threads) {
    return fail(fmt::format("max_inflight_batches is {}; expected 0 (= executor_threads) to executor_threads ({})",
                            *merged.max_inflight_batches, *merged.executor_threads));
  }
  if (*merged.max_batch_tokens > kMaxPolicyBatchTokens) {
    return fail(fmt::format("max_batch_tokens is {}; expected 0 (unlimited) to {}", *merged.max_batch_tokens,
                            kMaxPolicyBatchTokens));
  }
  if (Status s = b.validate(); !s.ok()) return fail(std::string(s.message()));
  options = std::move(o);
  return absl::OkStatus();
}

Status load_policy_path(RuntimeOptions& options) {
  if (options.policy_path.empty()) return absl::OkStatus();
  BRISK_ASSIGN_OR_RETURN(ServingPolicy policy, read_policy_file(options.policy_path));
  if (Status s = apply_policy(policy, options); !s.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("policy file '{}': {}", options.policy_path, std::string(s.message())));
  }
  options.policy_path.clear();
  return absl::OkStatus();
}

}  // namespace brisk
