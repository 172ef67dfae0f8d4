// libFuzzer target: Prometheus text exposition of arbitrary label values, help texts and names. The input is split
// at NUL bytes into label value, help text, metric name and label name. Invariants: escaping round-trips (an
// independent unescaper here gives the input back) and leaves no raw newline; a writer either reports an error or
// produces lines that each end in '\n' and carry the escaped value.
#include "brisk/metrics/prometheus.h"
#include "fuzz_util.h"

namespace {

std::string unescape(std::string_view s, bool label) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) brisk_fuzz::invariant_failed("escaped text ends in a lone backslash");
    if (s[i] == 'n') {
      out += '\n';
    } else if (s[i] == '\\' || (label && s[i] == '"')) {
      out += s[i];
    } else {
      brisk_fuzz::invariant_failed("unknown escape");
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using brisk::metrics::PrometheusWriter;
  const auto parts = brisk_fuzz::split(data, size, '\0', 4);
  const std::string_view value = parts[0];
  const std::string_view help = parts.size() > 1 ? parts[1] : "Help.";
  const std::string_view name = parts.size() > 2 ? parts[2] : "brisk_fuzz_total";
  const std::string_view label = parts.size() > 3 ? parts[3] : "model";

  const std::string ev = PrometheusWriter::escape_label_value(value);
  const std::string eh = PrometheusWriter::escape_help(help);
  if (ev.find('\n') != std::string::npos || eh.find('\n') != std::string::npos) {
    brisk_fuzz::invariant_failed("raw newline after escaping");
  }
  for (size_t i = 0; i < ev.size(); ++i) {  // every quote in a label value is escaped
    if (ev[i] == '\\') {
      ++i;
    } else if (ev[i] == '"') {
      brisk_fuzz::invariant_failed("unescaped quote in a label value");
    }
  }
  if (unescape(ev, true) != value) brisk_fuzz::invariant_failed("label value escaping does not round-trip");
  if (unescape(eh, false) != help) brisk_fuzz::invariant_failed("help escaping does not round-trip");

  PrometheusWriter w;
  const brisk::metrics::Label labels[] = {{label, value}};
  w.counter(name, help, labels, uint64_t(size));
  w.gauge("brisk_fuzz_gauge", help, labels, -1.5);
  const std::string text = w.str();
  if (!text.empty() && text.back() != '\n') brisk_fuzz::invariant_failed("exposition does not end in a newline");
  if (w.status().ok() && text.find(ev) == std::string::npos) brisk_fuzz::invariant_failed("escaped value missing");
  return 0;
}
