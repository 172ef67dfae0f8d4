// The C API's request tracing: brisk_runtime_options' span_fn (a SpanSink calling a C function with brisk_span views)
// and otlp_trace_path (the bundled OTLP/JSON lines sink).
#include <cstdio>
#include <string>
#include <vector>

#include "brisk.h"
#include "brisk_internal.h"
#include "brisk/runtime/tracing.h"

namespace brisk_capi {

namespace {

std::string value_text(const brisk::SpanAttribute& a) {
  if (const auto* s = std::get_if<std::string>(&a.value)) return *s;
  if (const auto* i = std::get_if<int64_t>(&a.value)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&a.value)) return *b ? "true" : "false";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", std::get<double>(a.value));
  return buf;
}

// Hands each request's spans to a C function as brisk_span views over strings that live during the call.
class CallbackSpanSink final : public brisk::SpanSink {
 public:
  CallbackSpanSink(brisk_span_fn fn, void* user_data) : fn_(fn), user_data_(user_data) {}

  void export_spans(std::span<const brisk::Span> spans) override {
    struct Texts {
      std::string trace_id, span_id, parent_span_id;
      std::vector<std::string> values;
      std::vector<brisk_span_attribute> attributes;
    };
    std::vector<Texts> texts(spans.size());
    std::vector<brisk_span> views(spans.size());
    for (size_t i = 0; i < spans.size(); ++i) {
      const brisk::Span& s = spans[i];
      Texts& t = texts[i];
      t.trace_id = brisk::to_hex(s.trace_id);
      t.span_id = brisk::to_hex(s.span_id);
      t.parent_span_id = s.parent_span_id == brisk::SpanId{} ? "" : brisk::to_hex(s.parent_span_id);
      t.values.reserve(s.attributes.size());
      for (const brisk::SpanAttribute& a : s.attributes) t.values.push_back(value_text(a));
      for (size_t k = 0; k < s.attributes.size(); ++k) {
        t.attributes.push_back(brisk_span_attribute{s.attributes[k].key.c_str(), t.values[k].c_str()});
      }
      views[i] =
          brisk_span{t.trace_id.c_str(),  t.span_id.c_str(),  t.parent_span_id.c_str(),       s.name.c_str(),
                     s.start_unix_nanos,  s.end_unix_nanos,   static_cast<int32_t>(s.status), s.status_message.c_str(),
                     t.attributes.data(), t.attributes.size()};
    }
    fn_(user_data_, views.data(), views.size());
  }

 private:
  brisk_span_fn fn_;
  void* user_data_;
};

}  // namespace

brisk_status tracing_options(const char* function, const brisk_runtime_options& o, brisk::RuntimeOptions& ro) {
  const bool otlp = o.otlp_trace_path != nullptr && o.otlp_trace_path[0] != '\0';
  if (o.span_fn != nullptr && otlp) {
    return fail(BRISK_INVALID_ARGUMENT, std::string(function) +
                                            ": options->span_fn and options->otlp_trace_path are both set; expected "
                                            "at most one of them");
  }
  if (o.span_fn != nullptr) ro.span_sink = std::make_shared<CallbackSpanSink>(o.span_fn, o.span_user_data);
  if (otlp) {
    brisk::OtlpJsonOptions otlp_options;
    if (o.otlp_service_name != nullptr && o.otlp_service_name[0] != '\0') {
      otlp_options.service_name = o.otlp_service_name;
    }
    auto sink = brisk::OtlpJsonLinesSink::open(o.otlp_trace_path, otlp_options);
    if (!sink.ok()) {
      return fail(code_of(sink.status()),
                  std::string(function) + ": options->otlp_trace_path: " + std::string(sink.status().message()));
    }
    ro.span_sink = std::move(*sink);
  }
  return BRISK_OK;
}

}  // namespace brisk_capi
