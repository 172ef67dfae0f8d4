// Short descriptions of JSON values for error messages. Never nlohmann's dump() on containers: it recurses, so a
// hostile file nested a few hundred thousand levels deep would overflow the stack.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace brisk {

inline std::string describe_json(const nlohmann::json& j) {
  if (j.is_array()) return absl::StrCat("an array of ", j.size(), " elements");
  if (j.is_object()) {
    auto type = j.find("type");
    if (type != j.end() && type->is_string()) {
      return absl::StrCat("an object of type \"", type->get_ref<const std::string&>().substr(0, 80), "\"");
    }
    return absl::StrCat("an object with ", j.size(), " keys");
  }
  std::string s = j.dump();  // a scalar: no recursion
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

}  // namespace brisk
