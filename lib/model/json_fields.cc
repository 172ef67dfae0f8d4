// Typed JSON fields of a model directory's files. See json_fields.h.
#include "json_fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "json_describe.h"

namespace brisk {

using nlohmann::json;

Status json_field_error(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

namespace {

// "<source>: key "<key>" is <value> (a JSON <type>); expected <expected>".
Status wrong_type(const std::string& source, const std::string& key, const json& value, const char* expected) {
  return json_field_error(source, absl::StrCat("key \"", key, "\" is ", describe_json(value), " (a JSON ",
                                               value.type_name(), "); expected ", expected));
}

}  // namespace

StatusOr<json> parse_json_object(const std::string& text, const std::string& source) {
  BRISK_ASSIGN_OR_RETURN(json j, parse_json_bounded(text, source));
  if (!j.is_object())
    return json_field_error(source, absl::StrCat("is a JSON ", j.type_name(), "; expected a JSON object"));
  return j;
}

StatusOr<int64_t> json_int_field(const json& j, const std::string& key, const std::string& source, bool required,
                                 int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (!required) return fallback;
    return json_field_error(source, absl::StrCat("missing required key \"", key, "\"; expected an integer"));
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    // e.g. 384.0; the range check first, since converting an out-of-range double to int64 is undefined
    if (std::fabs(d) < 9.2e18 && d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  if (!it->is_number_integer()) {
    return wrong_type(source, key, *it, "an integer");
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
    return json_field_error(
        source, absl::StrCat("key \"", key, "\" is ", describe_json(*it), "; expected an integer below 2^63"));
  }
  return it->get<int64_t>();
}

StatusOr<double> json_double_field(const json& j, const std::string& key, const std::string& source, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return wrong_type(source, key, *it, "a number");
  }
  return it->get<double>();
}

StatusOr<std::string> json_string_field(const json& j, const std::string& key, const std::string& source,
                                        const std::string& fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) {
    return wrong_type(source, key, *it, "a string");
  }
  return it->get<std::string>();
}

StatusOr<bool> json_bool_field(const json& j, const std::string& key, const std::string& source, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return wrong_type(source, key, *it, "true or false");
  }
  return it->get<bool>();
}

}  // namespace brisk
