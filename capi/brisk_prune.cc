// The C API over the pruner's sensitivity analysis (brisk/prune/sensitivity.h): option checks, the model and
// evaluation texts loaded as `brisk quantize` loads them, and a user's C metric callback as an AccuracyMetric.
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk.h"
#include "brisk/core/parallel.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/loader.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/weights.h"
#include "brisk/prune/importance.h"
#include "brisk/prune/sensitivity.h"
#include "brisk/prune/sensitivity_report.h"
#include "brisk/quant/quantizer.h"
#include "brisk/runtime/runtime.h"
#include "brisk_internal.h"

using namespace brisk_capi;

namespace {

constexpr const char* kFn = "brisk_prune_sensitivity";
// The fields of the first brisk_sensitivity_options; a caller's struct is at least this long.
constexpr size_t kMinSensitivityOptionsSize = offsetof(brisk_sensitivity_options, max_seq_len) + sizeof(int32_t);
constexpr size_t kTextsPerBatch = 32;
constexpr int kDefaultMaxSeqLen = 128;

// (This absl's AlphaNum takes std::string, not std::string_view.)
brisk_status bad_option(const std::string& field, const std::string& value, const std::string& expected) {
  return fail(BRISK_INVALID_ARGUMENT, absl::StrCat(kFn, ": options->", field, " is ", value, "; expected ", expected));
}

std::string quoted(const char* s) { return absl::StrCat("\"", s, "\""); }

// A string option: NULL keeps `out` (the default); anything else must be one of `allowed`.
brisk_status choose(const char* field, const char* value, std::initializer_list<const char*> allowed,
                    std::string& out) {
  if (value == nullptr) return BRISK_OK;
  for (const char* a : allowed) {
    if (std::strcmp(value, a) == 0) {
      out = value;
      return BRISK_OK;
    }
  }
  std::string expected;
  size_t i = 0;
  for (const char* a : allowed) {
    absl::StrAppend(&expected, i == 0 ? "" : (i + 1 == allowed.size() ? " or " : ", "), "\"", a, "\"");
    ++i;
  }
  return bad_option(field, quoted(value), expected);
}

// The checked options, in C++ terms.
struct Request {
  std::string model_dir, out_dir;
  std::vector<std::string_view> texts;
  brisk::prune::SensitivityOptions cpp;
  brisk_metric_callback metric = nullptr;
  void* metric_user_data = nullptr;
  int num_threads = 0;
  int max_seq_len = 0;
};

brisk_status check_options(const brisk_sensitivity_options& o, Request& r) {
  r.model_dir = o.model_dir != nullptr ? o.model_dir : brisk_default_model_dir();
  if (o.texts == nullptr) return null_argument(kFn, "options->texts");
  if (o.num_texts == 0) return bad_option("num_texts", "0", "at least one evaluation text");
  r.texts.resize(o.num_texts);
  for (size_t i = 0; i < o.num_texts; ++i) {
    if (o.texts[i] == nullptr) {
      return fail(BRISK_INVALID_ARGUMENT,
                  absl::StrCat(kFn, ": options->texts[", i, "] is NULL; expected a NUL-terminated UTF-8 string"));
    }
    r.texts[i] = o.texts[i];
  }
  if (o.out_dir == nullptr) return null_argument(kFn, "options->out_dir");
  if (o.out_dir[0] == '\0') return bad_option("out_dir", "\"\"", "a directory path");
  r.out_dir = o.out_dir;
  if (brisk_status s = choose("mode", o.mode, {"sweep", "zero"}, r.cpp.mode); s != BRISK_OK) return s;
  if (brisk_status s = choose("granularity", o.granularity, {"structure", "tensor"}, r.cpp.granularity);
      s != BRISK_OK) {
    return s;
  }
  std::string importance = "activation";
  if (brisk_status s = choose("importance", o.importance, {"activation", "l1", "l2"}, importance); s != BRISK_OK) {
    return s;
  }
  r.cpp.importance = brisk::prune::parse_importance(importance).value();
  if (o.levels != nullptr) {
    if (o.num_levels == 0) return bad_option("num_levels", "0", "at least one level (or levels NULL for defaults)");
    r.cpp.levels.assign(o.levels, o.levels + o.num_levels);
    for (size_t i = 0; i < o.num_levels; ++i) {
      if (!(o.levels[i] >= 0.0 && o.levels[i] < 1.0)) {  // false for NaN
        return bad_option(absl::StrCat("levels[", i, "]"), absl::StrCat(o.levels[i]), "a fraction in [0, 1)");
      }
    }
  }
  r.metric = o.metric;
  r.metric_user_data = o.metric_user_data;
  if (o.metric != nullptr) r.cpp.metric_name = o.metric_name != nullptr ? o.metric_name : "user";
  if (o.num_threads < 0 || o.num_threads > brisk::kMaxThreads) {
    return bad_option("num_threads", absl::StrCat(o.num_threads),
                      absl::StrCat("0 (the CPUs this process may use) to ", brisk::kMaxThreads));
  }
  r.num_threads = o.num_threads;
  if (o.max_seq_len < 0 || o.max_seq_len == 1) {
    return bad_option("max_seq_len", absl::StrCat(o.max_seq_len), "0 (128) or at least 2");
  }
  r.max_seq_len = o.max_seq_len;
  return BRISK_OK;
}

// The user's callback as an AccuracyMetric over the evaluation batches.
brisk::AccuracyMetric callback_metric(const Request& r, const std::vector<brisk::PackedSequences>& batches,
                                      brisk::Pooling pooling) {
  return [&r, &batches, pooling](const brisk::BertEncoder& candidate) -> brisk::StatusOr<double> {
    BRISK_ASSIGN_OR_RETURN(std::vector<float> e, brisk::quant::embed_all(candidate, batches, pooling));
    const size_t dim = static_cast<size_t>(candidate.hidden_size());
    double score = std::numeric_limits<double>::quiet_NaN();
    const int code = r.metric(r.metric_user_data, e.data(), e.size() / dim, dim, &score);
    if (code != 0) {
      return absl::CancelledError(
          absl::StrCat("the metric callback returned ", code, "; expected 0 (the analysis stopped there)"));
    }
    if (!std::isfinite(score)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the metric callback wrote score ", std::isnan(score) ? "NaN (or left it unwritten)" : absl::StrCat(score),
          "; expected a finite number, higher is better"));
    }
    return score;
  };
}

brisk::Status run(const Request& r) {
  using namespace brisk;
  ScopedNumThreads threads(r.num_threads);
  const std::string& dir = r.model_dir;
  BRISK_ASSIGN_OR_RETURN(LoadedModel model,
                         load_model(dir, {.max_seq_len = r.max_seq_len == 0 ? kDefaultMaxSeqLen : r.max_seq_len,
                                          .fp32_directory_only = true}));
  const BertConfig& config = model.config;
  const PoolingConfig& pooling = model.pooling;
  const TextTokenizer& tok = model.tokenizer;
  const EncoderWeights& weights = model.weights;
  const int max_seq_len = model.max_seq_len;

  std::vector<PackedSequences> batches;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < r.texts.size(); ++i) {
    if (Status s = tok.encode_into(r.texts[i], max_seq_len, ids); !s.ok()) {
      return Status(s.code(), absl::StrCat("options->texts[", i, "]: ", s.message()));
    }
    if (i % kTextsPerBatch == 0) batches.emplace_back();
    batches.back().add(ids);
  }

  prune::SensitivityOptions o = r.cpp;
  o.pooling = pooling.mode;
  if (r.metric != nullptr) o.metric = callback_metric(r, batches, pooling.mode);
  BRISK_ASSIGN_OR_RETURN(prune::SensitivityTable table,
                         prune::analyze_sensitivity(config, weights, batches, nullptr, o));
  return prune::write_sensitivity_outputs(table, r.out_dir);
}

}  // namespace

extern "C" {

brisk_status brisk_sensitivity_options_init(brisk_sensitivity_options* options, size_t struct_size) {
  if (options == nullptr) return null_argument("brisk_sensitivity_options_init", "options");
  if (struct_size < kMinSensitivityOptionsSize) {
    return fail(BRISK_INVALID_ARGUMENT, absl::StrCat("brisk_sensitivity_options_init: struct_size is ", struct_size,
                                                     "; expected sizeof(brisk_sensitivity_options)"));
  }
  // Every default is zero or NULL ("the default"), so a newer caller's extra bytes are zeroed like the rest.
  std::memset(options, 0, struct_size);
  options->struct_size = struct_size;
  return BRISK_OK;
}

brisk_status brisk_prune_sensitivity(const brisk_sensitivity_options* options) {
  return guarded(kFn, [&]() -> brisk_status {
    if (options == nullptr) return null_argument(kFn, "options");
    if (options->struct_size < kMinSensitivityOptionsSize) {
      return fail(BRISK_INVALID_ARGUMENT,
                  absl::StrCat(kFn, ": options->struct_size is ", options->struct_size,
                               "; expected sizeof(brisk_sensitivity_options), set by brisk_sensitivity_options_init"));
    }
    // Copy the prefix the caller knows about over our defaults.
    brisk_sensitivity_options o;
    brisk_sensitivity_options_init(&o, sizeof o);
    std::memcpy(&o, options, std::min(options->struct_size, sizeof o));
    Request r;
    if (brisk_status s = check_options(o, r); s != BRISK_OK) return s;
    const brisk::Status s = run(r);
    if (s.ok()) return BRISK_OK;
    return fail(code_of(s), absl::StrCat(kFn, ": ", s.message()));
  });
}

}  // extern "C"
