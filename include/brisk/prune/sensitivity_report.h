// SensitivityTable: the measured points of a pruning sensitivity analysis (brisk/prune/sensitivity.h for the
// native encoder, brisk/prune/torchscript.h for TorchScript modules), and its three renderings: CSV, JSON, and a
// self-contained SVG plot that a browser shows without other tools.
//
//   SensitivityTable t = ...;                      // from analyze_sensitivity()
//   BRISK_RETURN_IF_ERROR(write_sensitivity_outputs(t, "out/"));   // sensitivity.csv, .json, .svg
//
// Modes:
//   "sweep" (Distiller): each unit group pruned alone at increasing sparsity; the SVG has one panel per `kind`
//           ("heads", "ffn", "tensor", ...), one line per `series` (e.g. "layer 3"), metric against sparsity, with
//           labelled axes and a legend.
//   "zero":  one unit (a head, a layer, a parameter) removed at a time; the SVG shows the metric drop per removed
//           parameter, a heat map for units with an index (heads: layer x head), bars for the rest.
//
// Thread safety: plain value type; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk::prune {

struct BRISK_API SensitivityPoint {
  std::string unit;       // what was pruned, as the model names it: "encoder.layer.3.attention", a tensor name, ...
  std::string kind;       // the unit group's kind: "heads", "ffn", "layer", "head", "tensor"
  std::string series;     // the plot line (sweep) or heat-map row (zero) it belongs to: "layer 3", a tensor name
  int64_t layer = -1;     // the encoder layer, or -1
  int64_t index = -1;     // the unit's index within its series (a head's number), or -1
  double sparsity = 0.0;  // fraction of the group removed
  int64_t parameters_removed = 0;  // weights (and biases) removed or zeroed
  double metric = 0.0;             // the metric of the model with this unit pruned
};

struct BRISK_API SensitivityTable {
  std::string mode;         // "sweep" or "zero"
  std::string metric_name;  // "mean_cosine" for the built-in metric, else the user's name
  double baseline = 0.0;    // the metric of the unpruned model
  std::vector<SensitivityPoint> points;

  // Header: mode,kind,unit,series,layer,index,sparsity,parameters_removed,metric,drop,drop_per_parameter
  // (drop = baseline - metric; drop_per_parameter is 0 when nothing was removed). Fields are quoted when needed.
  std::string to_csv() const;
  // {"mode", "metric", "baseline", "points": [{...the CSV columns...}]}
  std::string to_json() const;
  // Reads to_json()'s output back (drop columns are recomputed, not read). Errors name `source` and the field.
  static StatusOr<SensitivityTable> from_json(const std::string& text, const std::string& source);
  std::string to_svg() const;
};

// Writes <out_dir>/sensitivity.csv, sensitivity.json and sensitivity.svg, creating out_dir; errors name the path.
BRISK_API Status write_sensitivity_outputs(const SensitivityTable& table, const std::string& out_dir);

}  // namespace brisk::prune
