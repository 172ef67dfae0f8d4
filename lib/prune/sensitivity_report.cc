// SensitivityTable's CSV and JSON renderings and the three output files. The SVG is in sensitivity_svg.cc.
// See include/brisk/prune/sensitivity_report.h.
#include "brisk/prune/sensitivity_report.h"
#include "brisk/core/internal/bounded_input.h"

#include <fmt/format.h>

#include <filesystem>
#include <type_traits>
#include <fstream>
#include <system_error>

#include "nlohmann/json.hpp"

namespace brisk::prune {
namespace {

double drop_of(const SensitivityTable& t, const SensitivityPoint& p) { return t.baseline - p.metric; }
double drop_per_parameter_of(const SensitivityTable& t, const SensitivityPoint& p) {
  return p.parameters_removed > 0 ? drop_of(t, p) / static_cast<double>(p.parameters_removed) : 0.0;
}

// RFC 4180: a field with a comma, a double quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// Shortest text that reads back as the same double.
std::string number(double v) { return fmt::format("{}", v); }

Status write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (out) out.close();
  if (!out) {
    return absl::PermissionDeniedError(fmt::format("could not write '{}'; expected a writable file", path.string()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string SensitivityTable::to_csv() const {
  std::string out = "mode,kind,unit,series,layer,index,sparsity,parameters_removed,metric,drop,drop_per_parameter\n";
  for (const SensitivityPoint& p : points) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(mode), csv_field(p.kind), csv_field(p.unit),
                       csv_field(p.series), p.layer, p.index, number(p.sparsity), p.parameters_removed,
                       number(p.metric), number(drop_of(*this, p)), number(drop_per_parameter_of(*this, p)));
  }
  return out;
}

std::string SensitivityTable::to_json() const {
  nlohmann::json j;
  j["mode"] = mode;
  j["metric"] = metric_name;
  j["baseline"] = baseline;
  j["points"] = nlohmann::json::array();
  for (const SensitivityPoint& p : points) {
    j["points"].push_back({{"mode", mode},
                           {"kind", p.kind},
                           {"unit", p.unit},
                           {"series", p.series},
                           {"layer", p.layer},
                           {"index", p.index},
                           {"sparsity", p.sparsity},
                           {"parameters_removed", p.parameters_removed},
                           {"metric", p.metric},
                           {"drop", drop_of(*this, p)},
                           {"drop_per_parameter", drop_per_parameter_of(*this, p)}});
  }
  // Units named by the model may hold any bytes: replace invalid UTF-8 rather than throw.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<SensitivityTable> SensitivityTable::from_json(const std::string& text, const std::string& source) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(fmt::format("{}: {}; expected brisk sensitivity's JSON output", source, what));
  };
  StatusOr<nlohmann::json> parsed = parse_json_bounded(text, source);
  if (!parsed.ok()) return bad(std::string(parsed.status().message()));
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return bad("is not a JSON object");
  SensitivityTable t;
  auto get = [&](const nlohmann::json& o, const char* key, auto& out, const std::string& where) -> Status {
    auto it = o.find(key);
    using T = std::decay_t<decltype(out)>;
    const bool ok = it != o.end() && (std::is_same_v<T, std::string> ? it->is_string()
                                      : std::is_integral_v<T>        ? it->is_number_integer()
                                                                     : it->is_number());
    if (!ok) return bad(fmt::format("{}\"{}\" is missing or has the wrong type", where, key));
    out = it->get<T>();
    return absl::OkStatus();
  };
  BRISK_RETURN_IF_ERROR(get(j, "mode", t.mode, ""));
  BRISK_RETURN_IF_ERROR(get(j, "metric", t.metric_name, ""));
  BRISK_RETURN_IF_ERROR(get(j, "baseline", t.baseline, ""));
  if (t.mode != "sweep" && t.mode != "zero") return bad(fmt::format("\"mode\" is \"{}\", not sweep or zero", t.mode));
  auto points = j.find("points");
  if (points == j.end() || !points->is_array()) return bad("\"points\" is missing or not an array");
  for (size_t i = 0; i < points->size(); ++i) {
    const nlohmann::json& o = (*points)[i];
    const std::string where = fmt::format("points[{}].", i);
    if (!o.is_object()) return bad(fmt::format("points[{}] is not an object", i));
    SensitivityPoint p;
    BRISK_RETURN_IF_ERROR(get(o, "kind", p.kind, where));
    BRISK_RETURN_IF_ERROR(get(o, "unit", p.unit, where));
    BRISK_RETURN_IF_ERROR(get(o, "series", p.series, where));
    BRISK_RETURN_IF_ERROR(get(o, "layer", p.layer, where));
    BRISK_RETURN_IF_ERROR(get(o, "index", p.index, where));
    BRISK_RETURN_IF_ERROR(get(o, "sparsity", p.sparsity, where));
    BRISK_RETURN_IF_ERROR(get(o, "parameters_removed", p.parameters_removed, where));
    BRISK_RETURN_IF_ERROR(get(o, "metric", p.metric, where));
    t.points.push_back(std::move(p));
  }
  return t;
}

Status write_sensitivity_outputs(const SensitivityTable& table, const std::string& out_dir) {
  namespace fs = std::filesystem;
  const fs::path dir = out_dir.empty() ? fs::path(".") : fs::path(out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::error_code is_dir_ec;
  if (ec || !fs::is_directory(dir, is_dir_ec)) {
    return absl::PermissionDeniedError(
        fmt::format("could not create the output directory '{}' ({}); expected a writable directory", dir.string(),
                    ec ? ec.message() : std::string("it is not a directory")));
  }
  BRISK_RETURN_IF_ERROR(write_file(dir / "sensitivity.csv", table.to_csv()));
  BRISK_RETURN_IF_ERROR(write_file(dir / "sensitivity.json", table.to_json()));
  BRISK_RETURN_IF_ERROR(write_file(dir / "sensitivity.svg", table.to_svg()));
  return absl::OkStatus();
}

}  // namespace brisk::prune
