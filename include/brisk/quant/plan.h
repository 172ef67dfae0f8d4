// PrecisionPlan: which precision each layer of a model runs in, written as layer-name patterns the way the model
// file names its layers ("encoder.layer.3.intermediate.dense", "embeddings.word_embeddings").
//
// Text form: a preset name, then optional rules, comma-separated; later rules override earlier ones.
//   "int8"                                    every linear layer int8-dynamic, word embeddings int8 rows
//   "int8-static"                             the same with calibrated static activation scales
//   "bf16"                                    every linear layer bf16 (embeddings stay fp32)
//   "mixed"                                   attention bf16, feed-forward int8, word embeddings int4-g32
//   "fp32"                                    nothing quantized
//   "int8,encoder.layer.0.*=fp32"             a preset with an exclusion
//   "*.intermediate.dense=int8,*.output.dense=int8"   rules only (everything else fp32)
// Patterns are globs over the whole name: '*' matches any run of characters (dots included), '?' one.
// A rule that matches no layer is an error listing the valid names, so a typo never silently does nothing.
// ("auto" is not a plan but a search: see quantizer.h.)
//
//   BRISK_ASSIGN_OR_RETURN(PrecisionPlan plan, PrecisionPlan::parse("int8,encoder.layer.5.output.dense=bf16"));
//   BRISK_ASSIGN_OR_RETURN(LayerPrecisions p, plan.resolve(layer_names(config)));
//
// Thread safety: value types; all functions are pure.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/config.h"
#include "brisk/quant/scheme.h"

namespace brisk::quant {

// Layer name -> precision, for every quantizable layer of a model.
using LayerPrecisions = std::map<std::string, PrecisionSpec>;

struct BRISK_API PlanRule {
  std::string pattern;
  PrecisionSpec precision;
};

struct BRISK_API PrecisionPlan {
  std::string text;  // as parsed, for reports and the file's metadata
  std::vector<PlanRule> rules;

  static StatusOr<PrecisionPlan> parse(std::string_view text);
  // Precision per layer (fp32 where no rule matches). Errors: a rule matching no name (lists the valid names),
  // and a precision the layer cannot take (the word embeddings take fp32, int8 or int4-gN).
  StatusOr<LayerPrecisions> resolve(const std::vector<std::string>& layer_names) const;
};

// True when `pattern` (a glob) matches the whole of `name`.
BRISK_API bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace brisk::quant
