// Precision plans. See include/brisk/quant/plan.h.
#include "brisk/quant/plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "brisk/model/weights.h"

namespace brisk::quant {
namespace {

constexpr const char* kPresets = "int8, int8-static, bf16, mixed, fp32";

std::vector<PlanRule> preset_rules(std::string_view name, bool* found) {
  *found = true;
  const PrecisionSpec int8{Precision::kInt8Dynamic};
  if (name == "int8") return {{"*", int8}};
  if (name == "int8-static") {
    return {{"*", PrecisionSpec{Precision::kInt8Static}}, {kWordEmbeddingsName, int8}};
  }
  if (name == "bf16") return {{"*", PrecisionSpec{Precision::kBF16}}, {kWordEmbeddingsName, PrecisionSpec{}}};
  if (name == "mixed") {
    // The attention projections in bf16, whatever the family calls them: BERT's and DistilBERT's "attention.*",
    // Qwen's "self_attn.*".
    return {{"*", int8},
            {"*.*att*.*", PrecisionSpec{Precision::kBF16}},
            {kWordEmbeddingsName, PrecisionSpec{Precision::kInt4, 32, false}}};
  }
  if (name == "fp32") return {};
  *found = false;
  return {};
}

bool valid_for_embeddings(const PrecisionSpec& p) {
  return p.precision == Precision::kF32 || p.precision == Precision::kInt8Dynamic || p.precision == Precision::kInt4;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative glob with backtracking to the last '*'.
  size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

StatusOr<PrecisionPlan> PrecisionPlan::parse(std::string_view text) {
  PrecisionPlan plan;
  plan.text = std::string(text);
  std::vector<std::string> parts = absl::StrSplit(std::string(text), ',', absl::SkipWhitespace());
  if (parts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("precision plan is empty; expected a preset (", kPresets, ") and/or pattern=precision rules"));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string part(absl::StripAsciiWhitespace(parts[i]));
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      bool found = false;
      std::vector<PlanRule> rules = preset_rules(part, &found);
      if (!found || i != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "precision plan entry '", part, "' is ", found ? "a preset after the first entry" : "not a preset",
            "; expected the first entry to be a preset (", kPresets, ") and the others pattern=precision"));
      }
      plan.rules = std::move(rules);
      continue;
    }
    const std::string pattern(absl::StripAsciiWhitespace(part.substr(0, eq)));
    if (pattern.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("precision plan rule '", part, "' has an empty pattern; expected pattern=precision"));
    }
    StatusOr<PrecisionSpec> precision = parse_precision(std::string(absl::StripAsciiWhitespace(part.substr(eq + 1))));
    if (!precision.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("precision plan rule '", part, "': ", precision.status().message()));
    }
    plan.rules.push_back({pattern, *precision});
  }
  return plan;
}

StatusOr<LayerPrecisions> PrecisionPlan::resolve(const std::vector<std::string>& names) const {
  LayerPrecisions out;
  for (const std::string& name : names) out[name] = PrecisionSpec{};
  for (const PlanRule& rule : rules) {
    bool matched = false;
    for (const std::string& name : names) {
      if (!glob_match(rule.pattern, name)) continue;
      matched = true;
      const bool embeddings = name == kWordEmbeddingsName;
      PrecisionSpec p = rule.precision;
      // A catch-all rule gives the embeddings the nearest precision they can take.
      if (embeddings && !valid_for_embeddings(p)) {
        if (rule.pattern != "*") {
          return absl::InvalidArgumentError(absl::StrCat("precision plan rule '", rule.pattern, "=", precision_name(p),
                                                         "' gives ", name, " ", precision_name(p),
                                                         "; expected fp32, int8 or int4-gN for the word embeddings"));
        }
        p = p.precision == Precision::kInt8Static ? PrecisionSpec{Precision::kInt8Dynamic} : PrecisionSpec{};
      }
      out[name] = p;
    }
    if (!matched) {
      return absl::InvalidArgumentError(
          absl::StrCat("precision plan pattern '", rule.pattern,
                       "' matches no layer; expected a glob over these names: ", absl::StrJoin(names, ", ")));
    }
  }
  return out;
}

}  // namespace brisk::quant
