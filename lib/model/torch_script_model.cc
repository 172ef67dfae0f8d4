// TorchScriptModel (brisk/model/torchscript_model.h) through libtorch (torch::jit::load). Compiled only when libtorch
// is found and usable (BRISK_HAVE_TORCHSCRIPT); torchscript_model_stub.cc stands in otherwise. No torch type leaves
// this file.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/script.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/model/torchscript_model.h"

namespace brisk {

struct TorchScriptModel::Impl {
  torch::jit::Module module;
  std::string path;
};

namespace {

// libtorch's message without its C++ backtrace, trimmed to something a log line can hold.
std::string reason(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string r = c10_error ? c10_error->what_without_backtrace() : e.what();
  while (!r.empty() && (r.back() == '\n' || r.back() == ' ')) r.pop_back();
  constexpr size_t kMaxReason = 1000;
  if (r.size() > kMaxReason) r = r.substr(0, kMaxReason) + " ...";
  return r;
}

std::string shape_str(c10::IntArrayRef sizes) { return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]"); }
std::string shape_str(const std::vector<int64_t>& sizes) { return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]"); }

std::string dtype_str(const at::Tensor& t) { return std::string(c10::toString(t.scalar_type())); }

StatusOr<at::Tensor> to_torch(const Tensor& t, const std::string& what) {
  if (t.device() != Device::kCPU)
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is on ", device_name(t.device()), "; expected a CPU tensor"));
  at::ScalarType type;
  switch (t.dtype()) {
    case DType::kF32: type = at::kFloat; break;
    case DType::kI64: type = at::kLong; break;
    case DType::kI32: type = at::kInt; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has dtype ", dtype_name(t.dtype()), "; expected f32, i64 or i32"));
  }
  if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat(what, " has no data; expected a tensor"));
  std::vector<int64_t> strides = t.strides().empty() ? contiguous_strides(t.shape()) : t.strides();
  try {
    return torch::from_blob(const_cast<void*>(t.raw_data()), t.shape(), strides, at::TensorOptions().dtype(type))
        .clone(at::MemoryFormat::Contiguous);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, " cannot become a torch tensor: ", reason(e)));
  }
}

// An owned contiguous f32 copy.
StatusOr<Tensor> to_brisk(const at::Tensor& t, const std::string& what) {
  if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat(what, " is an undefined tensor; expected data"));
  if (t.is_complex())
    return absl::InvalidArgumentError(absl::StrCat(what, " has dtype ", dtype_str(t), "; expected a real tensor"));
  at::Tensor c;
  try {
    c = t.detach().to(at::kCPU, at::kFloat).contiguous();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, " cannot be copied to f32: ", reason(e)));
  }
  BRISK_ASSIGN_OR_RETURN(Tensor out,
                         Tensor::empty(std::vector<int64_t>(c.sizes().begin(), c.sizes().end()), DType::kF32));
  if (out.nbytes() > 0) std::memcpy(out.raw_data(), c.data_ptr<float>(), out.nbytes());
  return out;
}

Status flatten_output(const c10::IValue& v, const std::string& what, std::vector<Tensor>& out) {
  if (v.isNone()) return absl::OkStatus();
  if (v.isTensor()) {
    BRISK_ASSIGN_OR_RETURN(Tensor t, to_brisk(v.toTensor(), absl::StrCat(what, " ", out.size())));
    out.push_back(std::move(t));
    return absl::OkStatus();
  }
  if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) BRISK_RETURN_IF_ERROR(flatten_output(e, what, out));
    return absl::OkStatus();
  }
  if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) BRISK_RETURN_IF_ERROR(flatten_output(e, what, out));
    return absl::OkStatus();
  }
  if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) BRISK_RETURN_IF_ERROR(flatten_output(entry.value(), what, out));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(what, " ", out.size(), " is a ", v.tagKind(),
                                                 "; expected a tensor, or a tuple, list or dict of tensors"));
}

std::optional<at::Tensor> find_parameter(const torch::jit::Module& m, const std::string& name) {
  for (const auto& p : m.named_parameters(/*recurse=*/true))
    if (p.name == name) return p.value;
  return std::nullopt;
}

Status unknown_parameter(const torch::jit::Module& m, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters(/*recurse=*/true)) names.push_back(p.name);
  return absl::NotFoundError(absl::StrCat("parameter '", name, "' is not in the module; expected one of: ",
                                          names.empty() ? std::string("(none)") : absl::StrJoin(names, ", ")));
}

StatusOr<at::Tensor> floating_parameter(const torch::jit::Module& m, const std::string& name) {
  std::optional<at::Tensor> p = find_parameter(m, name);
  if (!p) return unknown_parameter(m, name);
  if (!p->is_floating_point())
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' has dtype ", dtype_str(*p), "; expected a floating-point parameter"));
  return *p;
}

}  // namespace

TorchScriptModel::TorchScriptModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchScriptModel::TorchScriptModel(TorchScriptModel&&) noexcept = default;
TorchScriptModel& TorchScriptModel::operator=(TorchScriptModel&&) noexcept = default;
TorchScriptModel::~TorchScriptModel() = default;

StatusOr<TorchScriptModel> TorchScriptModel::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return absl::NotFoundError(
        absl::StrCat(path, ": no such file; expected a TorchScript module saved with torch.jit.save"));
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  try {
    impl->module = torch::jit::load(path, at::kCPU);
    impl->module.eval();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a readable TorchScript module (", reason(e),
                                                   "); expected a file saved with torch.jit.save"));
  }
  return TorchScriptModel(std::move(impl));
}

StatusOr<TorchScriptModel> TorchScriptModel::clone() const {
  auto impl = std::make_unique<Impl>();
  impl->path = impl_->path;
  try {
    torch::NoGradGuard no_grad;
    impl->module = impl_->module.clone();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(impl_->path, ": the module cannot be copied: ", reason(e)));
  }
  return TorchScriptModel(std::move(impl));
}

std::vector<std::string> TorchScriptModel::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& p : impl_->module.named_parameters(/*recurse=*/true)) names.push_back(p.name);
  return names;
}

std::vector<TorchScriptModel::ParameterInfo> TorchScriptModel::parameter_info() const {
  std::vector<ParameterInfo> out;
  for (const auto& p : impl_->module.named_parameters(/*recurse=*/true))
    out.push_back({p.name, std::vector<int64_t>(p.value.sizes().begin(), p.value.sizes().end()), dtype_str(p.value),
                   p.value.is_floating_point()});
  return out;
}

StatusOr<Tensor> TorchScriptModel::parameter(const std::string& name) const {
  BRISK_ASSIGN_OR_RETURN(at::Tensor p, floating_parameter(impl_->module, name));
  return to_brisk(p, absl::StrCat("parameter '", name, "'"));
}

Status TorchScriptModel::set_parameter(const std::string& name, const Tensor& value) {
  BRISK_ASSIGN_OR_RETURN(at::Tensor p, floating_parameter(impl_->module, name));
  if (value.shape() != std::vector<int64_t>(p.sizes().begin(), p.sizes().end()))
    return absl::InvalidArgumentError(absl::StrCat("the value for parameter '", name, "' has shape ",
                                                   shape_str(value.shape()), "; expected ", shape_str(p.sizes())));
  BRISK_ASSIGN_OR_RETURN(at::Tensor src, to_torch(value, absl::StrCat("the value for parameter '", name, "'")));
  try {
    torch::NoGradGuard no_grad;
    p.copy_(src);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "' cannot be written: ", reason(e)));
  }
  return absl::OkStatus();
}

StatusOr<std::vector<Tensor>> TorchScriptModel::forward(const std::vector<Tensor>& inputs) const {
  std::vector<c10::IValue> args;
  args.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    BRISK_ASSIGN_OR_RETURN(at::Tensor t, to_torch(inputs[i], absl::StrCat("forward() input ", i)));
    args.emplace_back(std::move(t));
  }
  c10::IValue result;
  try {
    torch::NoGradGuard no_grad;
    torch::jit::Module module = impl_->module;  // a handle: forward() is not const, the module is shared
    result = module.forward(std::move(args));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(impl_->path, ": forward() with ", inputs.size(), " input(s) failed: ", reason(e)));
  }
  std::vector<Tensor> out;
  BRISK_RETURN_IF_ERROR(flatten_output(result, absl::StrCat(impl_->path, ": forward() output"), out));
  return out;
}

Status TorchScriptModel::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  try {
    impl_->module.save(tmp);
  } catch (const std::exception& e) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return absl::DataLossError(absl::StrCat(path, ": the module cannot be saved (", reason(e), ")"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::DataLossError(absl::StrCat(path, ": cannot replace the file (", ec.message(), ")"));
  }
  return absl::OkStatus();
}

StatusOr<std::vector<TorchScriptModel::Argument>> TorchScriptModel::forward_arguments() const {
  std::vector<Argument> out;
  try {
    c10::optional<torch::jit::Method> forward = impl_->module.find_method("forward");
    if (!forward) return absl::InvalidArgumentError(absl::StrCat(impl_->path, ": the module has no forward() method"));
    const auto& args = forward->function().getSchema().arguments();
    for (size_t i = 1; i < args.size(); ++i) {
      const c10::TypePtr& type = args[i].type();
      c10::TypePtr element = type;
      if (const auto optional = type->cast<c10::OptionalType>()) element = optional->getElementType();
      out.push_back({args[i].name(), args[i].default_value().has_value(), type->annotation_str(),
                     element->kind() == c10::TypeKind::TensorType});
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(impl_->path, ": forward()'s schema is unreadable: ", reason(e)));
  }
  return out;
}

}  // namespace brisk
