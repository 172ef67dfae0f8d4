// `brisk quantize`: fp32 model directory in, one quantized model file out (see brisk/model/model_file.h).
//
//   brisk quantize --model DIR --plan int8|int8-static|bf16|mixed|auto|RULES --calib FILE --out FILE
//                  [--calibrator minmax|ema|percentile|entropy|mse] [--tolerance 0.995] [--fallback fp32|bf16]
//                  [--smoothquant ALPHA] [--report-csv FILE] [--report-json FILE] [--threads N]
//
// Shows progress on stderr, then prints the per-layer report (precision, weight error, scales, activation range,
// sensitivity for auto), the calibration-set cosine against fp32 and the sizes of the source and output files.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace brisk::cli {

struct QuantizeFlags {
  std::string model_dir;
  std::string plan;
  std::string calib;
  std::string out;
  std::string calibrator = "percentile";
  double tolerance = 0.995;
  std::string fallback = "fp32";
  double smoothquant = 0.5;  // SmoothQuant's alpha for the int8 layers; 0 turns it off
  std::string report_csv, report_json;
  int threads = 0;
  int max_seq_len = 128;

  void add_to(CLI::App& cmd);
};

// Returns the process exit code (0 ok, 1 error).
int run_quantize(const QuantizeFlags& flags);

}  // namespace brisk::cli
