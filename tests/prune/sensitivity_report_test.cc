// SensitivityTable's renderings: CSV (header, RFC 4180 quoting, drop columns), JSON (parsed back), the SVG (panels,
// axes, one line per series, legend, escaping; the zero mode's heat map and bars), and the output files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "brisk/prune/sensitivity_report.h"
#include "test_util.h"

using namespace brisk;
using namespace brisk::prune;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

SensitivityPoint point(std::string kind, std::string series, std::string unit, double sparsity, double metric,
                       int64_t removed, int64_t index = -1) {
  SensitivityPoint p;
  p.kind = std::move(kind);
  p.series = std::move(series);
  p.unit = std::move(unit);
  p.sparsity = sparsity;
  p.metric = metric;
  p.parameters_removed = removed;
  p.index = index;
  return p;
}

// Two kinds; "ffn" has three series, one of them with XML's special characters in its name.
SensitivityTable sweep_table() {
  SensitivityTable t;
  t.mode = "sweep";
  t.metric_name = "mean_cosine";
  t.baseline = 1.0;
  for (double s : {0.25, 0.5, 0.75}) {
    t.points.push_back(point("heads", "layer 0", "encoder.layer.0.attention", s, 1.0 - s / 4, 100));
    t.points.push_back(point("heads", "layer 1", "encoder.layer.1.attention", s, 1.0 - s / 2, 100));
  }
  for (double s : {0.5, 0.25, 0.75}) {  // out of order: the line is drawn by sparsity
    t.points.push_back(point("ffn", "layer 0", "encoder.layer.0.intermediate", s, 1.0 - s / 8, 400));
    t.points.push_back(point("ffn", "layer 1", "encoder.layer.1.intermediate", s, 1.0 - s / 3, 400));
    t.points.push_back(point("ffn", "a<b&c", "x<y>&z", s, 1.0 - s / 5, 400));
  }
  return t;
}

SensitivityTable zero_table() {
  SensitivityTable t;
  t.mode = "zero";
  t.metric_name = "accuracy";
  t.baseline = 1.0;
  // Drops per parameter (1 - metric) / 100: from 0.0001 (layer 0 head 0) to 0.005 (layer 1 head 2).
  const double metrics[2][3] = {{0.99, 0.95, 0.9}, {0.8, 0.7, 0.5}};
  for (int layer = 0; layer < 2; ++layer) {
    for (int head = 0; head < 3; ++head) {
      SensitivityPoint p = point("head", "layer " + std::to_string(layer),
                                 "encoder.layer." + std::to_string(layer) + ".head." + std::to_string(head), 1.0,
                                 metrics[layer][head], 100, head);
      p.layer = layer;
      t.points.push_back(p);
    }
  }
  t.points.push_back(point("layer", "layers", "encoder.layer.0", 1.0, 0.6, 1000));
  t.points.push_back(point("layer", "layers", "encoder.layer.1", 1.0, 0.2, 1000));
  return t;
}

}  // namespace

TEST_CASE("CSV: header, quoting, drop and drop per parameter", "[prune][report]") {
  SensitivityTable t;
  t.mode = "zero";
  t.metric_name = "mean_cosine";
  t.baseline = 1.0;
  SensitivityPoint a = point("tensor", "encoder.layer.0,attention", "say \"hi\"", 0.5, 0.75, 200, 3);
  a.layer = 0;
  t.points.push_back(a);
  t.points.push_back(point("tensor", "plain", "nothing", 0.0, 1.0, 0));
  const std::vector<std::string> l = lines(t.to_csv());
  REQUIRE(l.size() == 3);
  CHECK(l[0] == "mode,kind,unit,series,layer,index,sparsity,parameters_removed,metric,drop,drop_per_parameter");
  // drop = 1 - 0.75 = 0.25; per parameter 0.25 / 200 = 0.00125.
  CHECK(l[1] == "zero,tensor,\"say \"\"hi\"\"\",\"encoder.layer.0,attention\",0,3,0.5,200,0.75,0.25,0.00125");
  CHECK(l[2] == "zero,tensor,nothing,plain,-1,-1,0,0,1,0,0");
}

TEST_CASE("JSON parses back with every field", "[prune][report]") {
  const SensitivityTable t = sweep_table();
  const nlohmann::json j = nlohmann::json::parse(t.to_json());
  CHECK(j.at("mode") == "sweep");
  CHECK(j.at("metric") == "mean_cosine");
  CHECK(j.at("baseline").get<double>() == 1.0);
  REQUIRE(j.at("points").size() == t.points.size());
  const nlohmann::json& p = j.at("points").at(1);  // heads, layer 1, sparsity 0.25: metric 0.875
  CHECK(p.at("kind") == "heads");
  CHECK(p.at("series") == "layer 1");
  CHECK(p.at("unit") == "encoder.layer.1.attention");
  CHECK(p.at("layer").get<int64_t>() == -1);
  CHECK(p.at("index").get<int64_t>() == -1);
  CHECK(p.at("sparsity").get<double>() == 0.25);
  CHECK(p.at("parameters_removed").get<int64_t>() == 100);
  CHECK(p.at("metric").get<double>() == 0.875);
  CHECK(p.at("drop").get<double>() == 0.125);
  CHECK(p.at("drop_per_parameter").get<double>() == Approx(0.00125));
  CHECK(j.at("points").at(6).at("unit") == "encoder.layer.0.intermediate");
}

TEST_CASE("sweep SVG: a panel per kind, a line per series, axes, legend, escaping", "[prune][report]") {
  const std::string svg = sweep_table().to_svg();
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("@import") == std::string::npos);
  // Panels in order of first appearance, each titled and with both axis labels.
  const size_t heads = svg.find(">heads: mean_cosine against sparsity</text>");
  const size_t ffn = svg.find(">ffn: mean_cosine against sparsity</text>");
  REQUIRE(heads != std::string::npos);
  REQUIRE(ffn != std::string::npos);
  CHECK(heads < ffn);
  CHECK(count(svg, "class=\"axis-label\"") == 4);
  CHECK(count(svg, ">sparsity</text>") == 2);
  CHECK(count(svg, ">mean_cosine</text>") == 2);
  // One polyline per series per panel: 2 + 3; the ffn panel's lines are drawn in order of sparsity.
  CHECK(count(svg, "<polyline") == 5);
  CHECK(count(svg.substr(0, ffn), "<polyline") == 2);
  CHECK(count(svg, "class=\"baseline\"") == 2);
  // Legend entries: "layer 0" and "layer 1" in both panels, the escaped name in one.
  CHECK(count(svg, "class=\"legend\" ") == 5);
  CHECK(count(svg, ">layer 0</text>") == 2);
  CHECK(count(svg, ">layer 1</text>") == 2);
  CHECK(count(svg, ">a&lt;b&amp;c</text>") == 1);
  CHECK(svg.find("a<b") == std::string::npos);
  CHECK(svg.find("x<y>&z") == std::string::npos);
  CHECK(svg.find("x&lt;y&gt;&amp;z") != std::string::npos);
  // Distinct colours for the series of a panel.
  const size_t first_line = svg.find("<polyline", ffn);
  CHECK(svg.find("#1f77b4", first_line) != std::string::npos);
  CHECK(svg.find("#ff7f0e", first_line) != std::string::npos);
  CHECK(svg.find("#2ca02c", first_line) != std::string::npos);
}

TEST_CASE("sweep SVG: polylines follow sparsity order", "[prune][report]") {
  SensitivityTable t;
  t.mode = "sweep";
  t.metric_name = "m";
  t.baseline = 1.0;
  for (double s : {0.5, 0.0, 1.0}) t.points.push_back(point("tensor", "w", "w", s, 1.0 - s, 1));
  const std::string svg = t.to_svg();
  const size_t at = svg.find("points=\"");
  REQUIRE(at != std::string::npos);
  const std::string pts = svg.substr(at + 8, svg.find('"', at + 8) - at - 8);
  std::vector<double> xs;
  std::istringstream in(pts);
  for (std::string xy; in >> xy;) xs.push_back(std::stod(xy.substr(0, xy.find(','))));
  REQUIRE(xs.size() == 3);
  CHECK(xs[0] < xs[1]);
  CHECK(xs[1] < xs[2]);
}

TEST_CASE("zero SVG: a heat map cell per indexed unit, a bar per other unit", "[prune][report]") {
  const std::string svg = zero_table().to_svg();
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(count(svg, "class=\"cell\"") == 6);
  CHECK(count(svg, "class=\"bar\"") == 2);
  CHECK(svg.find(">encoder.layer.0</text>") != std::string::npos);
  CHECK(svg.find(">encoder.layer.1</text>") != std::string::npos);
  // Rows and columns labelled; the colour scale shows the extremes 0.0001 and 0.005.
  CHECK(svg.find(">layer 0</text>") != std::string::npos);
  CHECK(svg.find(">layer 1</text>") != std::string::npos);
  CHECK(svg.find(">0.0001</text>") != std::string::npos);
  CHECK(svg.find(">0.005</text>") != std::string::npos);
  CHECK(svg.find("class=\"colour-scale\"") != std::string::npos);
  // Each cell's title gives its value: layer 1 head 1 drops (1 - 0.7) / 100 = 0.003.
  CHECK(svg.find("<title>layer 1, head 1 (encoder.layer.1.head.1): drop per parameter 0.003") != std::string::npos);
  // The lowest cell is white, the highest dark red.
  CHECK(svg.find("fill=\"#ffffff\" stroke=\"#fff\"><title>layer 0, head 0 ") != std::string::npos);
  CHECK(svg.find("fill=\"#8b0000\" stroke=\"#fff\"><title>layer 1, head 2 ") != std::string::npos);
  // Bars: (1 - 0.6) / 1000 = 0.0004 and (1 - 0.2) / 1000 = 0.0008.
  CHECK(svg.find("<title>encoder.layer.1: drop per parameter 0.0008") != std::string::npos);
  CHECK(svg.find("<polyline") == std::string::npos);
}

TEST_CASE("write_sensitivity_outputs writes three files, or names the path it cannot write", "[prune][report]") {
  testing::TempDir dir;
  const SensitivityTable t = sweep_table();
  const std::string out = dir.file("nested/out");
  REQUIRE(write_sensitivity_outputs(t, out).ok());
  const auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK(read(std::filesystem::path(out) / "sensitivity.csv") == t.to_csv());
  CHECK(read(std::filesystem::path(out) / "sensitivity.json") == t.to_json());
  CHECK(read(std::filesystem::path(out) / "sensitivity.svg") == t.to_svg());

  const std::string file = dir.write("plain", "not a directory");
  const Status s = write_sensitivity_outputs(t, file + "/sub");
  REQUIRE_FALSE(s.ok());
  INFO(s.message());
  CHECK(std::string(s.message()).find(file + "/sub") != std::string::npos);
  const Status s2 = write_sensitivity_outputs(t, file);
  REQUIRE_FALSE(s2.ok());
  CHECK(std::string(s2.message()).find(file) != std::string::npos);
}
