// PrometheusWriter: text exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/).
#include "brisk/metrics/prometheus.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "brisk/core/utf8.h"

namespace brisk::metrics {
namespace {

const char* type_name(int t) {
  static const char* const kNames[] = {"counter", "gauge", "summary", "histogram"};
  return kNames[t];
}

bool name_char(char c, bool first, bool allow_colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (c == ':') return allow_colon;
  return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, allow_colon)) return false;
  }
  return true;
}

// absl::StrCat takes absl::string_view, which Debian's Abseil does not alias to std::string_view: concatenate
// std::string_views (and indices) here instead.
void append_part(std::string* out, std::string_view s) { out->append(s); }
void append_part(std::string* out, size_t n) { out->append(std::to_string(n)); }
template <typename... Parts>
void append(std::string* out, const Parts&... parts) {
  (append_part(out, parts), ...);
}
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::string out;
  append(&out, parts...);
  return out;
}
absl::string_view as_absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

template <typename T>
std::string integer_text(T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// A bound in exposed units → the largest recorded value it admits. Snaps to the nearest integer when within
// rounding error of it, so that 0.005 s at scale 1e-9 means 5000000 ns and not 4999999.
uint64_t recorded_limit(double bound, double scale) {
  const double x = bound / scale;
  if (!(x >= 0.0)) return 0;  // negative bounds admit nothing (values are unsigned)
  if (x >= 18446744073709551615.0) return std::numeric_limits<uint64_t>::max();
  const double r = std::nearbyint(x);
  const double v = std::fabs(x - r) <= 1e-9 * std::max(1.0, x) ? r : std::floor(x);
  return v >= 18446744073709551615.0 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(v);
}

// value * scale, rounded once: for the usual unit changes (scale 1e-9, 1e-6, 1e-3) divide by the exact integer
// 1/scale, so that 52000000 ns prints as 0.052 and not as 0.052000000000000005.
double scaled(double value, double scale) {
  const double inverse = std::nearbyint(1.0 / scale);
  if (inverse >= 2.0 && std::fabs(1.0 / scale - inverse) <= 1e-9 * inverse) return value / inverse;
  return value * scale;
}

}  // namespace

std::string SampleValue::str() const {
  switch (kind_) {
    case Kind::kInt: return integer_text(i_);
    case Kind::kUint: return integer_text(u_);
    case Kind::kDouble: break;
  }
  return PrometheusWriter::format_double(d_);
}

PrometheusWriter::PrometheusWriter() = default;
PrometheusWriter::~PrometheusWriter() = default;
PrometheusWriter::PrometheusWriter(PrometheusWriter&&) noexcept = default;
PrometheusWriter& PrometheusWriter::operator=(PrometheusWriter&&) noexcept = default;

std::string PrometheusWriter::format_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that parses back to v
  return std::string(buf, r.ptr);
}

std::string PrometheusWriter::escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PrometheusWriter::escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

bool PrometheusWriter::valid_metric_name(std::string_view name) { return valid_name(name, true); }
bool PrometheusWriter::valid_label_name(std::string_view name) { return valid_name(name, false); }

void PrometheusWriter::fail(Status s) {
  if (status_.ok()) status_ = std::move(s);
}

PrometheusWriter::Family* PrometheusWriter::family_for(const char* method, std::string_view name, std::string_view help,
                                                       Type type, Labels labels, std::string_view reserved_label,
                                                       std::string* rendered_labels) {
  auto error = [&](auto&&... parts) {
    fail(absl::InvalidArgumentError(concat("PrometheusWriter::", method, "(\"", name, "\"): ", parts...)));
    return nullptr;
  };
  if (!valid_metric_name(name)) return error("invalid metric name; expected [a-zA-Z_:][a-zA-Z0-9_:]*");
  if (!is_valid_utf8(help)) return error("help text is not valid UTF-8");
  rendered_labels->clear();
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto& [key, value] = labels[i];
    if (!valid_label_name(key)) {
      return error("invalid label name \"", key, "\"; expected [a-zA-Z_][a-zA-Z0-9_]*");
    }
    if (key.size() >= 2 && key[0] == '_' && key[1] == '_') {
      return error("label name \"", key, "\" starts with \"__\", which Prometheus reserves");
    }
    if (!reserved_label.empty() && key == reserved_label) {
      return error("label \"", key, "\" is written by the ", method, " itself");
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].first == key) return error("label \"", key, "\" is given twice");
    }
    if (!is_valid_utf8(value)) return error("value of label \"", key, "\" is not valid UTF-8");
    if (i > 0) *rendered_labels += ',';
    append(rendered_labels, key, "=\"", escape_label_value(value), "\"");
  }

  auto it = family_index_.find(as_absl(name));
  if (it != family_index_.end()) {
    Family& f = families_[it->second];
    if (f.type != type) {
      return error("family was first written as a ", type_name(static_cast<int>(f.type)), ", now as a ",
                   type_name(static_cast<int>(type)), "; expected one type per family");
    }
    if (!written_.insert(concat(name, std::string_view("\0", 1), *rendered_labels)).second) {
      return error("series {", *rendered_labels, "} written twice; expected each label set once per scrape");
    }
    if (f.help.empty()) f.help = std::string(help);
    return &f;
  }

  // A new family: its series names must not collide with another family's.
  std::vector<std::string> series = {std::string(name)};
  if (type == Type::kSummary || type == Type::kHistogram) {
    series.push_back(concat(name, "_sum"));
    series.push_back(concat(name, "_count"));
  }
  if (type == Type::kHistogram) series.push_back(concat(name, "_bucket"));
  for (const std::string& s : series) {
    auto owner = series_owner_.find(as_absl(s));
    if (owner != series_owner_.end()) {
      return error("series name \"", s, "\" collides with family \"", owner->second, "\"");
    }
  }
  for (std::string& s : series) series_owner_.emplace(std::move(s), std::string(name));
  written_.insert(concat(name, std::string_view("\0", 1), *rendered_labels));
  family_index_.emplace(std::string(name), families_.size());
  families_.push_back(Family{std::string(name), std::string(help), type, {}});
  return &families_.back();
}

namespace {

// name{labels,extra} value\n — extra is one more pre-rendered label (quantile or le), or empty.
void append_sample(std::string* out, std::string_view name, std::string_view labels, std::string_view extra,
                   std::string_view value) {
  append(out, name);
  if (!labels.empty() || !extra.empty()) {
    append(out, "{", labels, (!labels.empty() && !extra.empty()) ? "," : "", extra, "}");
  }
  append(out, " ", value, "\n");
}

}  // namespace

void PrometheusWriter::scalar(const char* method, Type type, std::string_view name, std::string_view help,
                              Labels labels, SampleValue value) {
  if (type == Type::kCounter && value.negative()) {
    fail(absl::InvalidArgumentError(concat("PrometheusWriter::counter(\"", name, "\"): value ", value.str(),
                                           " is negative; expected a count >= 0")));
    return;
  }
  std::string rendered;
  Family* f = family_for(method, name, help, type, labels, {}, &rendered);
  if (f == nullptr) return;
  append_sample(&f->samples, name, rendered, {}, value.str());
}

void PrometheusWriter::counter(std::string_view name, std::string_view help, Labels labels, SampleValue value) {
  scalar("counter", Type::kCounter, name, help, labels, value);
}

void PrometheusWriter::gauge(std::string_view name, std::string_view help, Labels labels, SampleValue value) {
  scalar("gauge", Type::kGauge, name, help, labels, value);
}

void PrometheusWriter::summary(std::string_view name, std::string_view help, Labels labels,
                               const HistogramSnapshot& snapshot, double scale) {
  if (!(std::isfinite(scale) && scale > 0.0)) {
    fail(absl::InvalidArgumentError(concat("PrometheusWriter::summary(\"", name, "\"): scale ", format_double(scale),
                                           " is invalid; expected finite and > 0")));
    return;
  }
  std::string rendered;
  Family* f = family_for("summary", name, help, Type::kSummary, labels, "quantile", &rendered);
  if (f == nullptr) return;
  const bool empty = snapshot.count() == 0;
  for (double q : kSummaryQuantiles) {
    const double v = empty ? std::numeric_limits<double>::quiet_NaN()
                           : scaled(static_cast<double>(snapshot.percentile(q * 100.0)), scale);
    append_sample(&f->samples, name, rendered, concat("quantile=\"", format_double(q), "\""), format_double(v));
  }
  append_sample(&f->samples, concat(name, "_sum"), rendered, {},
                format_double(scaled(static_cast<double>(snapshot.sum()), scale)));
  append_sample(&f->samples, concat(name, "_count"), rendered, {}, integer_text(snapshot.count()));
}

void PrometheusWriter::histogram(std::string_view name, std::string_view help, Labels labels,
                                 const HistogramSnapshot& snapshot, absl::Span<const double> upper_bounds,
                                 double scale) {
  auto error = [&](auto&&... parts) {
    fail(absl::InvalidArgumentError(concat("PrometheusWriter::histogram(\"", name, "\"): ", parts...)));
  };
  if (!(std::isfinite(scale) && scale > 0.0)) {
    return error("scale ", format_double(scale), " is invalid; expected finite and > 0");
  }
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    const double b = upper_bounds[i];
    if (std::isnan(b)) return error("upper_bounds[", i, "] is NaN");
    if (i > 0 && !(b > upper_bounds[i - 1])) {
      return error("upper_bounds[", i, "] = ", format_double(b), " is not above the previous bound; expected ",
                   "strictly increasing bounds");
    }
    if (std::isinf(b) && (b < 0 || i + 1 != upper_bounds.size())) {
      return error("upper_bounds[", i, "] is infinite; only a last +Inf is allowed");
    }
  }
  std::string rendered;
  Family* f = family_for("histogram", name, help, Type::kHistogram, labels, "le", &rendered);
  if (f == nullptr) return;
  const std::string bucket = concat(name, "_bucket");
  for (double b : upper_bounds) {
    if (std::isinf(b)) break;  // written below, once
    const uint64_t n = snapshot.count_at_or_below(recorded_limit(b, scale));
    append_sample(&f->samples, bucket, rendered, concat("le=\"", format_double(b), "\""), integer_text(n));
  }
  append_sample(&f->samples, bucket, rendered, "le=\"+Inf\"", integer_text(snapshot.count()));
  append_sample(&f->samples, concat(name, "_sum"), rendered, {},
                format_double(scaled(static_cast<double>(snapshot.sum()), scale)));
  append_sample(&f->samples, concat(name, "_count"), rendered, {}, integer_text(snapshot.count()));
}

std::string PrometheusWriter::str() const {
  std::string out;
  for (const Family& f : families_) {
    if (!f.help.empty()) append(&out, "# HELP ", f.name, " ", escape_help(f.help), "\n");
    append(&out, "# TYPE ", f.name, " ", type_name(static_cast<int>(f.type)), "\n", f.samples);
  }
  return out;
}

void PrometheusWriter::clear() {
  families_.clear();
  family_index_.clear();
  series_owner_.clear();
  written_.clear();
  status_ = absl::OkStatus();
}

}  // namespace brisk::metrics
