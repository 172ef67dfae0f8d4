// brisk/model/torchscript_model.h in a build without libtorch (BRISK_WITH_TORCH=OFF, or libtorch-dev not found), or
// built by clang (see lib/CMakeLists.txt): what needs libtorch returns Unimplemented, naming the build option.
// torch_script_model.cc is the real implementation.
#if !defined(BRISK_HAVE_TORCHSCRIPT)

#include "absl/strings/str_cat.h"
#include "brisk/model/torchscript_model.h"

namespace brisk {
namespace {

absl::Status no_torch(const std::string& what) {
  return absl::UnimplementedError(absl::StrCat(
      what,
      ": this build of brisk lacks libtorch (BRISK_WITH_TORCH=OFF or libtorch-dev not found), so it cannot run "
      "TorchScript modules; rebuild with libtorch (-DBRISK_WITH_TORCH=ON)"));
}

}  // namespace

struct TorchScriptModel::Impl {};

TorchScriptModel::TorchScriptModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchScriptModel::TorchScriptModel(TorchScriptModel&&) noexcept = default;
TorchScriptModel& TorchScriptModel::operator=(TorchScriptModel&&) noexcept = default;
TorchScriptModel::~TorchScriptModel() = default;

StatusOr<TorchScriptModel> TorchScriptModel::load(const std::string& path) { return no_torch(path); }
StatusOr<TorchScriptModel> TorchScriptModel::clone() const { return no_torch("TorchScriptModel::clone"); }
std::vector<std::string> TorchScriptModel::parameter_names() const { return {}; }
std::vector<TorchScriptModel::ParameterInfo> TorchScriptModel::parameter_info() const { return {}; }
StatusOr<Tensor> TorchScriptModel::parameter(const std::string&) const {
  return no_torch("TorchScriptModel::parameter");
}
Status TorchScriptModel::set_parameter(const std::string&, const Tensor&) {
  return no_torch("TorchScriptModel::set_parameter");
}
StatusOr<std::vector<Tensor>> TorchScriptModel::forward(const std::vector<Tensor>&) const {
  return no_torch("TorchScriptModel::forward");
}
Status TorchScriptModel::save(const std::string& path) const { return no_torch(path); }
StatusOr<std::vector<TorchScriptModel::Argument>> TorchScriptModel::forward_arguments() const {
  return no_torch("TorchScriptModel::forward_arguments");
}

}  // namespace brisk

#endif  // !BRISK_HAVE_TORCHSCRIPT
