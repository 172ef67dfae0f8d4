// Error handling for brisk's C++ API: absl::Status and absl::StatusOr, plus propagation macros.
// No exception crosses a public brisk API; every fallible call returns Status or StatusOr<T>.
//
//   brisk::StatusOr<Tensor> t = Tensor::empty({2, 3}, DType::kF32);
//   BRISK_RETURN_IF_ERROR(check_shape(*t));
//   BRISK_ASSIGN_OR_RETURN(auto weights, SafetensorsFile::open(path));
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace brisk {

using Status = absl::Status;
template <typename T>
using StatusOr = absl::StatusOr<T>;

}  // namespace brisk

#define BRISK_STATUS_CONCAT_INNER(a, b) a##b
#define BRISK_STATUS_CONCAT(a, b) BRISK_STATUS_CONCAT_INNER(a, b)

#define BRISK_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status brisk_status_ = (expr);         \
    if (!brisk_status_.ok()) return brisk_status_; \
  } while (0)

#define BRISK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(*tmp)

#define BRISK_ASSIGN_OR_RETURN(lhs, expr) \
  BRISK_ASSIGN_OR_RETURN_IMPL(BRISK_STATUS_CONCAT(brisk_statusor_, __LINE__), lhs, expr)
