// W3C traceparent parsing and formatting, span ids, and the OTLP/JSON lines sink (brisk/runtime/tracing.h).
#include "brisk/runtime/tracing.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"

namespace brisk {

namespace {

constexpr std::string_view kExpected = "expected 00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>";
constexpr size_t kVersion00Size = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2

// The value as an error message shows it: at most 80 bytes, non-printable bytes as \xNN.
std::string shown(std::string_view value) {
  std::string out;
  const size_t n = std::min<size_t>(value.size(), 80);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += absl::StrCat("\\x", absl::Hex(c, absl::kZeroPad2));
    }
  }
  if (value.size() > n) absl::StrAppend(&out, "... (", value.size(), " bytes)");
  return out;
}

Status invalid(std::string_view value, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("traceparent is '", shown(value), "'; ", std::string(why), "; ", std::string(kExpected)));
}

int hex_digit_lowercase(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Decodes 2 * out.size() lowercase hex digits; false on any other character.
bool decode_hex(std::string_view hex, std::span<uint8_t> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_digit_lowercase(hex[2 * i]);
    const int lo = hex_digit_lowercase(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

template <size_t N>
bool all_zero(const std::array<uint8_t, N>& bytes) {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

std::mt19937_64& thread_rng() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device device;
    std::seed_seq seed{device(),
                       device(),
                       device(),
                       device(),
                       static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id())),
                       static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count())};
    return std::mt19937_64(seed);
  }();
  return rng;
}

template <size_t N>
std::array<uint8_t, N> random_nonzero_bytes() {
  std::array<uint8_t, N> out{};
  std::mt19937_64& rng = thread_rng();
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t word = rng();
      std::memcpy(out.data() + i, &word, std::min<size_t>(8, N - i));
    }
  } while (all_zero(out));
  return out;
}

nlohmann::json any_value(const decltype(SpanAttribute::value)& value) {
  // OTLP/JSON follows proto3's JSON mapping: int64 as a decimal string, non-finite doubles as their names.
  if (const auto* s = std::get_if<std::string>(&value)) return {{"stringValue", *s}};
  if (const auto* i = std::get_if<int64_t>(&value)) return {{"intValue", std::to_string(*i)}};
  if (const auto* b = std::get_if<bool>(&value)) return {{"boolValue", *b}};
  const double d = std::get<double>(value);
  if (std::isnan(d)) return {{"doubleValue", "NaN"}};
  if (std::isinf(d)) return {{"doubleValue", d > 0 ? "Infinity" : "-Infinity"}};
  return {{"doubleValue", d}};
}

nlohmann::json key_values(std::span<const SpanAttribute> attributes) {
  nlohmann::json out = nlohmann::json::array();
  for (const SpanAttribute& a : attributes) out.push_back({{"key", a.key}, {"value", any_value(a.value)}});
  return out;
}

}  // namespace

StatusOr<TraceContext> parse_traceparent(std::string_view value) {
  if (value.size() < kVersion00Size) {
    return invalid(value, absl::StrCat("it has ", value.size(), " characters, fewer than the 55 of version 00"));
  }
  uint8_t version = 0;
  if (!decode_hex(value.substr(0, 2), {&version, 1})) {
    return invalid(value, "its version is not 2 lowercase hex digits");
  }
  if (version == 0xff) return invalid(value, "its version ff is invalid");
  if (version == 0 && value.size() != kVersion00Size) {
    return invalid(value, absl::StrCat("it has ", value.size(), " characters; version 00 has exactly 55"));
  }
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') {
    return invalid(value, "its fields are not separated by '-' at characters 3, 36 and 53");
  }
  // A higher version: its version 00 fields, then the end or a '-' (section 3.2.4, Versioning of traceparent).
  if (value.size() > kVersion00Size && value[kVersion00Size] != '-') {
    return invalid(value, "its flags are followed by something other than '-'");
  }
  TraceContext context;
  if (!decode_hex(value.substr(3, 32), context.trace_id)) {
    return invalid(value, "its trace-id is not 32 lowercase hex digits");
  }
  if (!decode_hex(value.substr(36, 16), context.span_id)) {
    return invalid(value, "its parent-id is not 16 lowercase hex digits");
  }
  if (!decode_hex(value.substr(53, 2), {&context.flags, 1})) {
    return invalid(value, "its trace-flags are not 2 lowercase hex digits");
  }
  if (all_zero(context.trace_id)) return invalid(value, "its trace-id is all zeros, which is invalid");
  if (all_zero(context.span_id)) return invalid(value, "its parent-id is all zeros, which is invalid");
  // Of a higher version only the sampled bit is defined for us (section 3.2.4).
  if (version != 0) context.flags &= 0x01;
  return context;
}

std::string format_traceparent(const TraceContext& context) {
  return absl::StrCat("00-", to_hex(context.trace_id), "-", to_hex(context.span_id), "-",
                      to_hex(std::span<const uint8_t>(&context.flags, 1)));
}

TraceContext child_of(const TraceContext& context) {
  return TraceContext{context.trace_id, random_span_id(), static_cast<uint8_t>(context.flags & 0x01)};
}

TraceContext new_trace(bool sampled) {
  return TraceContext{random_trace_id(), random_span_id(), static_cast<uint8_t>(sampled ? 0x01 : 0x00)};
}

SpanId random_span_id() { return random_nonzero_bytes<8>(); }

TraceId random_trace_id() { return random_nonzero_bytes<16>(); }

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0x0f];
  }
  return out;
}

int64_t unix_nanos(std::chrono::steady_clock::time_point t) {
  static const int64_t offset = [] {
    const auto system = std::chrono::system_clock::now().time_since_epoch();
    const auto steady = std::chrono::steady_clock::now().time_since_epoch();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(system).count() -
           std::chrono::duration_cast<std::chrono::nanoseconds>(steady).count();
  }();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count() + offset;
}

const SpanAttribute* Span::attribute(std::string_view key) const {
  for (const SpanAttribute& a : attributes) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

SpanSink::~SpanSink() = default;

std::string otlp_json(std::span<const Span> spans, const OtlpJsonOptions& options) {
  nlohmann::json out_spans = nlohmann::json::array();
  for (const Span& s : spans) {
    nlohmann::json span = {
        {"traceId", to_hex(s.trace_id)},
        {"spanId", to_hex(s.span_id)},
        {"name", s.name},
        {"kind", 1},  // SPAN_KIND_INTERNAL: brisk runs inside its host's server span
        {"startTimeUnixNano", std::to_string(s.start_unix_nanos)},
        {"endTimeUnixNano", std::to_string(s.end_unix_nanos)},
        {"attributes", key_values(s.attributes)},
    };
    if (!all_zero(s.parent_span_id)) span["parentSpanId"] = to_hex(s.parent_span_id);
    nlohmann::json status = {{"code", static_cast<int>(s.status)}};
    if (!s.status_message.empty()) status["message"] = s.status_message;
    span["status"] = std::move(status);
    out_spans.push_back(std::move(span));
  }
  const SpanAttribute service{"service.name", options.service_name};
  nlohmann::json request = {
      {"resourceSpans",
       {{{"resource", {{"attributes", key_values({&service, 1})}}},
         {"scopeSpans",
          {{{"scope", {{"name", "brisk"}, {"version", BRISK_VERSION_STRING}}}, {"spans", std::move(out_spans)}}}}}}}};
  // Invalid UTF-8 in a name or message becomes U+FFFD rather than an exception.
  return request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<std::unique_ptr<OtlpJsonLinesSink>> OtlpJsonLinesSink::open(const std::string& path, OtlpJsonOptions options) {
  std::FILE* file = std::fopen(path.c_str(), "ae");
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("OtlpJsonLinesSink: cannot open '", path, "' for appending: ", std::strerror(errno)));
  }
  return std::unique_ptr<OtlpJsonLinesSink>(new OtlpJsonLinesSink(file, true, std::move(options)));
}

std::unique_ptr<OtlpJsonLinesSink> OtlpJsonLinesSink::over(std::FILE* file, OtlpJsonOptions options) {
  return std::unique_ptr<OtlpJsonLinesSink>(new OtlpJsonLinesSink(file, false, std::move(options)));
}

OtlpJsonLinesSink::OtlpJsonLinesSink(std::FILE* file, bool owned, OtlpJsonOptions options)
    : file_(file), owned_(owned), options_(std::move(options)) {}

OtlpJsonLinesSink::~OtlpJsonLinesSink() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

void OtlpJsonLinesSink::export_spans(std::span<const Span> spans) {
  if (spans.empty()) return;
  std::string line = otlp_json(spans, options_);
  line += '\n';
  std::lock_guard lock(mu_);
  if (file_ == nullptr) return;
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    if (status_.ok()) {
      status_ = absl::DataLossError(absl::StrCat("OtlpJsonLinesSink: writing spans failed: ", std::strerror(errno)));
    }
  }
}

Status OtlpJsonLinesSink::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

}  // namespace brisk
