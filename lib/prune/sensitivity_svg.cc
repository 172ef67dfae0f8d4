// SensitivityTable::to_svg: a self-contained SVG (no scripts, no external fonts) that a browser shows as is.
//   sweep: one line-chart panel per kind, metric against sparsity, one coloured line per series, legend, baseline.
//   zero:  drop per removed parameter; a heat map per kind for units with an index (rows: series, columns: index),
//          and a horizontal bar chart for the units without one.
// See include/brisk/prune/sensitivity_report.h.
#include "brisk/prune/sensitivity_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "brisk/core/utf8.h"

namespace brisk::prune {
namespace {

// Tableau 10; past ten series the colours repeat with a dash pattern.
constexpr std::string_view kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr std::string_view kDashes[] = {"", "7,3", "2,2", "9,3,2,3"};
constexpr int kPaletteSize = 10, kDashCount = 4;
constexpr double kCharWidth = 6.6;  // of a 12 px sans-serif character, for sizing label columns

// Text made safe for XML: markup characters as entities, bytes that are not UTF-8 and control characters as U+FFFD.
std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Utf8Char c = decode_utf8(s, i);
    if (!c.ok()) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    switch (c.code_point) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c.code_point < 0x20 && c.code_point != '\t') {
          out += "\xEF\xBF\xBD";
        } else {
          out.append(s.substr(i, static_cast<size_t>(c.length)));
        }
    }
    i += static_cast<size_t>(c.length);
  }
  return out;
}

// At most `max_chars` code points, with "..." when cut.
std::string shorten(const std::string& s, size_t max_chars) {
  size_t chars = 0, pos = 0;
  while (pos < s.size() && chars < max_chars - 3) {
    const Utf8Char c = decode_utf8(s, pos);
    pos += c.ok() ? static_cast<size_t>(c.length) : 1;
    ++chars;
  }
  size_t total = chars, rest = pos;
  while (rest < s.size() && total <= max_chars) {
    const Utf8Char c = decode_utf8(s, rest);
    rest += c.ok() ? static_cast<size_t>(c.length) : 1;
    ++total;
  }
  return total <= max_chars ? s : s.substr(0, pos) + "...";
}

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : std::string("n/a"); }
std::string px(double v) { return fmt::format("{:.1f}", v); }

// Round tick positions (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target) {
  const double span = hi - lo;
  if (!(span > 0) || !std::isfinite(span)) return {lo};
  const double raw = span / target, power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    step = f * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

template <typename Key>
std::vector<std::string> distinct(const std::vector<const SensitivityPoint*>& points, Key key) {
  std::vector<std::string> out;
  for (const SensitivityPoint* p : points) {
    if (std::find(out.begin(), out.end(), key(*p)) == out.end()) out.push_back(key(*p));
  }
  return out;
}

double drop_per_parameter(const SensitivityTable& t, const SensitivityPoint& p) {
  return p.parameters_removed > 0 ? (t.baseline - p.metric) / static_cast<double>(p.parameters_removed) : 0.0;
}

struct Section {
  std::string body;
  double width = 0, height = 0;
};

std::string stroke_of(size_t series) {
  std::string s = fmt::format("stroke=\"{}\"", kPalette[series % kPaletteSize]);
  const size_t dash = (series / kPaletteSize) % kDashCount;
  if (dash > 0) s += fmt::format(" stroke-dasharray=\"{}\"", kDashes[dash]);
  return s;
}

Section sweep_panel(const SensitivityTable& t, const std::vector<const SensitivityPoint*>& pts,
                    const std::string& kind) {
  const std::vector<std::string> series = distinct(pts, [](const SensitivityPoint& p) { return p.series; });
  size_t longest = 6;
  for (const std::string& s : series) longest = std::max(longest, std::min<size_t>(s.size(), 40));
  const double left = 78, top = 44, plot_w = 480;
  const double plot_h = std::max(280.0, 20.0 * static_cast<double>(series.size()) + 10);
  const double legend_x = left + plot_w + 24, width = legend_x + 40 + kCharWidth * double(longest) + 16;
  const double height = top + plot_h + 56;

  double x_max = 0, y_lo = std::numeric_limits<double>::infinity(), y_hi = -y_lo;
  for (const SensitivityPoint* p : pts) {
    if (std::isfinite(p->sparsity)) x_max = std::max(x_max, p->sparsity);
    if (std::isfinite(p->metric)) y_lo = std::min(y_lo, p->metric), y_hi = std::max(y_hi, p->metric);
  }
  if (!(x_max > 0)) x_max = 1;
  if (std::isfinite(t.baseline)) y_lo = std::min(y_lo, t.baseline), y_hi = std::max(y_hi, t.baseline);
  if (!std::isfinite(y_lo)) y_lo = 0, y_hi = 1;
  const double pad = y_hi > y_lo ? 0.08 * (y_hi - y_lo) : std::max(0.05 * std::fabs(y_hi), 1e-3);
  y_lo -= pad, y_hi += pad;
  const auto sx = [&](double x) { return left + plot_w * x / x_max; };
  const auto sy = [&](double y) { return top + plot_h * (y_hi - y) / (y_hi - y_lo); };

  std::string b;
  b += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}: {} against "
      "sparsity</text>\n",
      px(left), esc(kind), esc(t.metric_name));
  // Grid, ticks and their labels.
  for (double x : nice_ticks(0, x_max, 6)) {
    b += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>\n", px(sx(x)), px(top),
                     px(top + plot_h));
    b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(sx(x)), px(top + plot_h + 16),
                     num(x));
  }
  for (double y : nice_ticks(y_lo, y_hi, 6)) {
    b += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e4e4e4\"/>\n", px(left), px(sy(y)),
                     px(left + plot_w));
    b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(left - 6), px(sy(y) + 4), num(y));
  }
  b += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", px(left),
                   px(top), px(plot_w), px(plot_h));
  b += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">sparsity</text>\n",
                   px(left + plot_w / 2), px(top + plot_h + 40));
  b += fmt::format(
      "<text class=\"axis-label\" transform=\"translate({},{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      px(18), px(top + plot_h / 2), esc(t.metric_name));
  if (std::isfinite(t.baseline)) {
    b += fmt::format(
        "<line class=\"baseline\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#555\" "
        "stroke-dasharray=\"5,4\"><title>baseline (unpruned) {3}</title></line>\n",
        px(left), px(sy(t.baseline)), px(left + plot_w), num(t.baseline));
    b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">baseline</text>\n",
                     px(left + plot_w - 4), px(sy(t.baseline) - 4));
  }
  // One polyline with markers per series, then the legend.
  for (size_t i = 0; i < series.size(); ++i) {
    std::vector<const SensitivityPoint*> line;
    for (const SensitivityPoint* p : pts) {
      if (p->series == series[i] && std::isfinite(p->sparsity) && std::isfinite(p->metric)) line.push_back(p);
    }
    std::stable_sort(line.begin(), line.end(),
                     [](const SensitivityPoint* a, const SensitivityPoint* b) { return a->sparsity < b->sparsity; });
    std::string coords;
    for (const SensitivityPoint* p : line)
      coords += fmt::format("{}{},{}", coords.empty() ? "" : " ", px(sx(p->sparsity)), px(sy(p->metric)));
    b += fmt::format("<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke-width=\"2\" {}/>\n", coords,
                     stroke_of(i));
    for (const SensitivityPoint* p : line) {
      b += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"><title>{} ({}): sparsity {}, {} {}</title></circle>\n",
          px(sx(p->sparsity)), px(sy(p->metric)), kPalette[i % kPaletteSize], esc(p->series), esc(p->unit),
          num(p->sparsity), esc(t.metric_name), num(p->metric));
    }
    const double ly = top + 10 + 20.0 * static_cast<double>(i);
    b += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke-width=\"2\" {3}/>\n", px(legend_x),
                     px(ly), px(legend_x + 28), stroke_of(i));
    b += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"/>\n", px(legend_x + 14), px(ly),
                     kPalette[i % kPaletteSize]);
    b += fmt::format("<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>\n", px(legend_x + 36), px(ly + 4),
                     esc(shorten(series[i], 40)));
  }
  return {std::move(b), width, height};
}

// White (lowest) to dark red (highest).
std::string heat_colour(double fraction) {
  const double f = std::clamp(fraction, 0.0, 1.0);
  const auto mix = [&](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * f)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(255, 139), mix(255, 0), mix(255, 0));
}

Section heat_map(const SensitivityTable& t, const std::vector<const SensitivityPoint*>& pts, const std::string& kind,
                 int id) {
  const std::vector<std::string> rows = distinct(pts, [](const SensitivityPoint& p) { return p.series; });
  std::vector<int64_t> columns;
  for (const SensitivityPoint* p : pts) columns.push_back(p->index);
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const SensitivityPoint* p : pts) {
    const double v = drop_per_parameter(t, *p);
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  size_t longest = 4;
  for (const std::string& r : rows) longest = std::max(longest, std::min<size_t>(r.size(), 40));
  const double cell_w = std::clamp(640.0 / static_cast<double>(columns.size()), 6.0, 56.0);
  const double cell_h = rows.size() > 30 ? 12.0 : 26.0;
  const double left = 16 + kCharWidth * double(longest), top = 74;
  const double grid_w = cell_w * static_cast<double>(columns.size()),
               grid_h = cell_h * static_cast<double>(rows.size());
  const double width = std::max(left + grid_w + 24, 420.0), height = top + grid_h + 84;

  std::string b;
  b += fmt::format(
      "<text class=\"title\" x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}: {} drop per "
      "removed parameter</text>\n",
      esc(kind), esc(t.metric_name));
  b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{} index</text>\n", px(left + grid_w / 2),
                   px(top - 30), esc(kind));
  const size_t label_every = static_cast<size_t>(std::ceil(22.0 / cell_w));
  for (size_t c = 0; c < columns.size(); c += label_every) {
    b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     px(left + cell_w * (double(c) + 0.5)), px(top - 6), columns[c]);
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(left - 6),
                     px(top + cell_h * (double(r) + 0.5) + 4), esc(shorten(rows[r], 40)));
  }
  for (const SensitivityPoint* p : pts) {
    const size_t r = static_cast<size_t>(std::find(rows.begin(), rows.end(), p->series) - rows.begin());
    const size_t c = static_cast<size_t>(std::lower_bound(columns.begin(), columns.end(), p->index) - columns.begin());
    const double v = drop_per_parameter(t, *p);
    const double f = !std::isfinite(v) ? 0.0 : hi > lo ? (v - lo) / (hi - lo) : (v != 0 ? 1.0 : 0.0);
    const double x = left + cell_w * double(c), y = top + cell_h * double(r);
    b += fmt::format(
        "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\">"
        "<title>{}, {} {} ({}): drop per parameter {} ({} {}, {} parameters removed)</title></rect>\n",
        px(x), px(y), px(cell_w), px(cell_h), std::isfinite(v) ? heat_colour(f) : "#cccccc", esc(p->series), esc(kind),
        p->index, esc(p->unit), num(v), esc(t.metric_name), num(p->metric), p->parameters_removed);
    if (cell_w >= 48 && cell_h >= 20) {
      b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"9\" fill=\"{}\">{}</text>\n",
                       px(x + cell_w / 2), px(y + cell_h / 2 + 3), f > 0.55 ? "#fff" : "#000",
                       std::isfinite(v) ? fmt::format("{:.3g}", v) : std::string("n/a"));
    }
  }
  // Colour legend: the gradient with its end values.
  const double ly = top + grid_h + 22, lw = 220;
  b += fmt::format(
      "<defs><linearGradient id=\"heat{}\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\"><stop offset=\"0\" "
      "stop-color=\"{}\"/><stop offset=\"1\" stop-color=\"{}\"/></linearGradient></defs>\n",
      id, heat_colour(0), heat_colour(1));
  b += fmt::format(
      "<rect class=\"colour-scale\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" fill=\"url(#heat{})\" "
      "stroke=\"#444\"/>\n",
      px(left), px(ly), px(lw), id);
  b += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", px(left), px(ly + 28),
                   std::isfinite(lo) ? num(lo) : std::string("n/a"));
  b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(left + lw), px(ly + 28),
                   std::isfinite(hi) ? num(hi) : std::string("n/a"));
  b += fmt::format("<text x=\"{}\" y=\"{}\">drop per parameter</text>\n", px(left + lw + 10), px(ly + 10));
  return {std::move(b), std::max(width, left + lw + 150), height};
}

Section bar_chart(const SensitivityTable& t, const std::vector<const SensitivityPoint*>& pts) {
  constexpr size_t kMaxLabel = 60;
  size_t longest = 4;
  double lo = 0, hi = 0;
  for (const SensitivityPoint* p : pts) {
    longest = std::max(longest, std::min(p->unit.size(), kMaxLabel));
    const double v = drop_per_parameter(t, *p);
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!(hi > lo)) hi = lo + 1;
  const double left = 16 + kCharWidth * double(longest), top = 44, bar_h = 18, gap = 5, plot_w = 420;
  const double plot_h = (bar_h + gap) * static_cast<double>(pts.size());
  const double width = left + plot_w + 90, height = top + plot_h + 52;
  const auto sx = [&](double v) { return left + plot_w * (v - lo) / (hi - lo); };

  std::string b;
  std::string kinds;
  for (const std::string& k : distinct(pts, [](const SensitivityPoint& p) { return p.kind; })) {
    kinds += kinds.empty() ? k : ", " + k;
  }
  b += fmt::format(
      "<text class=\"title\" x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}: {} drop per "
      "removed parameter</text>\n",
      esc(kinds), esc(t.metric_name));
  for (double x : nice_ticks(lo, hi, 5)) {
    b += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>\n", px(sx(x)), px(top),
                     px(top + plot_h));
    b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(sx(x)), px(top + plot_h + 16),
                     num(x));
  }
  for (size_t i = 0; i < pts.size(); ++i) {
    const SensitivityPoint& p = *pts[i];
    const double v = drop_per_parameter(t, p), y = top + (bar_h + gap) * double(i);
    const double x0 = sx(0), x1 = std::isfinite(v) ? sx(v) : x0;
    const std::string label = p.unit.empty() ? p.series : p.unit;
    b += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(left - 6), px(y + bar_h / 2 + 4),
                     esc(shorten(label, kMaxLabel)));
    b += fmt::format(
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: drop "
        "per parameter {} ({} {}, {} parameters removed)</title></rect>\n",
        px(std::min(x0, x1)), px(y), px(std::fabs(x1 - x0)), px(bar_h), v < 0 ? "#4575b4" : "#b22222", esc(label),
        num(v), esc(t.metric_name), num(p.metric), p.parameters_removed);
    b += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\">{}</text>\n", px(std::max(x0, x1) + 4),
                     px(y + bar_h / 2 + 4), num(v));
  }
  b += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444\"/>\n", px(sx(0)), px(top),
                   px(top + plot_h));
  b += fmt::format(
      "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">drop per parameter "
      "(baseline - {}) / parameters removed</text>\n",
      px(left + plot_w / 2), px(top + plot_h + 38), esc(t.metric_name));
  return {std::move(b), width, height};
}

}  // namespace

std::string SensitivityTable::to_svg() const {
  std::vector<Section> sections;
  std::vector<const SensitivityPoint*> all;
  for (const SensitivityPoint& p : points) all.push_back(&p);
  const auto kinds_of = [](const std::vector<const SensitivityPoint*>& pts) {
    return distinct(pts, [](const SensitivityPoint& p) { return p.kind; });
  };
  const auto of_kind = [](const std::vector<const SensitivityPoint*>& pts, const std::string& kind) {
    std::vector<const SensitivityPoint*> out;
    for (const SensitivityPoint* p : pts) {
      if (p->kind == kind) out.push_back(p);
    }
    return out;
  };
  if (mode == "zero") {
    std::vector<const SensitivityPoint*> indexed, unindexed;
    for (const SensitivityPoint* p : all) (p->index >= 0 ? indexed : unindexed).push_back(p);
    int id = 0;
    for (const std::string& kind : kinds_of(indexed))
      sections.push_back(heat_map(*this, of_kind(indexed, kind), kind, id++));
    if (!unindexed.empty()) sections.push_back(bar_chart(*this, unindexed));
  } else {
    for (const std::string& kind : kinds_of(all)) sections.push_back(sweep_panel(*this, of_kind(all, kind), kind));
  }

  const double header = 36;
  double width = 480, height = header;
  for (const Section& s : sections) width = std::max(width, s.width), height += s.height + 16;
  if (sections.empty()) height += 40;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text x=\"16\" y=\"24\" font-size=\"17\" font-weight=\"bold\">pruning sensitivity ({2}): {3}, baseline "
      "{4}</text>\n",
      px(width), px(height), esc(mode), esc(metric_name), num(baseline));
  double y = header;
  for (const Section& s : sections) {
    out += fmt::format("<g transform=\"translate(0,{})\">\n{}</g>\n", px(y), s.body);
    y += s.height + 16;
  }
  if (sections.empty()) out += "<text x=\"16\" y=\"60\">no measured points</text>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace brisk::prune
