// TorchScript modules through libtorch (torch::jit::load), and their pruning and sensitivity analysis. Compiled only
// when libtorch is found and usable (BRISK_HAVE_TORCHSCRIPT); torchscript_stub.cc stands in otherwise. No torch type
// leaves this file.
//
// Masks come from brisk/prune/mask.h, the same functions the native pruner uses, so both count as
// torch.nn.utils.prune does (round(amount * n), lowest magnitude first). An f32 contiguous parameter is scored and
// masked in place through a brisk Tensor that borrows its memory; any other floating dtype is scored on an f32 copy
// and masked with masked_fill_, so its kept elements keep every bit.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/script.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/prune/mask.h"
#include "brisk/prune/torchscript.h"

namespace brisk::prune {

struct TorchScriptModel::Impl {
  torch::jit::Module module;
  std::string path;
};

struct TorchScriptAccess {
  static torch::jit::Module& module(TorchScriptModel& m) { return m.impl_->module; }
  static const torch::jit::Module& module(const TorchScriptModel& m) { return m.impl_->module; }
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

struct Selected {
  std::string name;
  at::Tensor value;  // aliases the module's parameter
};

// options.parameters in module order (duplicates once), or every floating parameter of rank >= 2.
StatusOr<std::vector<Selected>> select_parameters(const torch::jit::Module& m, const std::vector<std::string>& names) {
  for (const std::string& name : names) BRISK_RETURN_IF_ERROR(floating_parameter(m, name).status());
  std::vector<Selected> out;
  for (const auto& p : m.named_parameters(/*recurse=*/true)) {
    const bool chosen = names.empty() ? (p.value.is_floating_point() && p.value.dim() >= 2)
                                      : std::find(names.begin(), names.end(), p.name) != names.end();
    if (chosen) out.push_back({p.name, p.value});
  }
  if (out.empty())
    return absl::InvalidArgumentError(
        "the module has no floating-point parameter of 2 or more dimensions; expected at least one to prune "
        "(or name parameters explicitly)");
  return out;
}

// The [rows, cols] shape mask.h's 2-D functions see for a parameter: rows = its first dimension.
std::vector<int64_t> matrix_shape(const at::Tensor& t) {
  if (t.dim() == 0) return {1, 1};
  if (t.dim() == 1) return {1, t.size(0)};
  return {t.size(0), t.numel() / t.size(0)};
}

// Magnitude scores of a parameter as a 2-D f32 brisk tensor. `keep_alive` holds an f32 copy when one is needed.
StatusOr<Tensor> magnitude_scores(const at::Tensor& value, at::Tensor& keep_alive) {
  keep_alive = value.detach().to(at::kFloat).contiguous();  // no copy for an f32 contiguous parameter
  Tensor weight = Tensor::borrow(keep_alive.data_ptr(), matrix_shape(keep_alive), DType::kF32);
  return element_scores(weight, {});
}

// Zeroes the parameter where the mask (u8, 2-D view of it) is 0.
Status apply_parameter_mask(at::Tensor& value, const Tensor& mask) {
  torch::NoGradGuard no_grad;
  if (value.scalar_type() == at::kFloat && value.is_contiguous()) {
    Tensor weight = Tensor::borrow(value.data_ptr(), matrix_shape(value), DType::kF32);
    return apply_mask(weight, mask);
  }
  at::Tensor keep = torch::from_blob(const_cast<void*>(mask.raw_data()), value.sizes(), at::kByte);
  value.masked_fill_(keep.eq(0), 0);
  return absl::OkStatus();
}

int64_t count_pruned(const Tensor& mask) {
  const auto* m = mask.data<uint8_t>();
  return std::count(m, m + mask.numel(), uint8_t{0});
}

// Rows of an output for the cosine metric: [rows, features], mean-pooled over an attention mask when there is one.
StatusOr<Tensor> cosine_rows(const Tensor& output, const std::vector<Tensor>& inputs) {
  const bool pooled = output.rank() == 3 && inputs.size() >= 2 && inputs[1].rank() == 2 &&
                      (inputs[1].dtype() == DType::kI64 || inputs[1].dtype() == DType::kI32) &&
                      inputs[1].dim(0) == output.dim(0) && inputs[1].dim(1) == output.dim(1);
  if (!pooled) {
    if (output.rank() == 0) return output.reshape({1, 1});
    if (output.rank() == 1) return output.reshape({1, output.dim(0)});
    return output.reshape({output.dim(0), output.numel() / std::max<int64_t>(output.dim(0), 1)});
  }
  const int64_t b = output.dim(0), t = output.dim(1), h = output.dim(2);
  BRISK_ASSIGN_OR_RETURN(Tensor rows, Tensor::zeros({b, h}, DType::kF32));
  BRISK_ASSIGN_OR_RETURN(at::Tensor mask, to_torch(inputs[1], "attention mask"));
  const int64_t* m = nullptr;
  at::Tensor mask64 = mask.to(at::kLong).contiguous();
  m = mask64.data_ptr<int64_t>();
  for (int64_t i = 0; i < b; ++i) {
    float* row = rows.data<float>() + i * h;
    int64_t count = 0;
    for (int64_t j = 0; j < t; ++j) {
      if (m[i * t + j] == 0) continue;
      ++count;
      const float* x = output.data<float>() + (i * t + j) * h;
      for (int64_t k = 0; k < h; ++k) row[k] += x[k];
    }
    for (int64_t k = 0; k < h && count > 0; ++k) row[k] /= float(count);
  }
  return rows;
}

double row_cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0;
  if (aa == 0 || bb == 0) return 0.0;
  return ab / std::sqrt(aa * bb);
}

}  // namespace

// ---- TorchScriptModel ----

TorchScriptModel::TorchScriptModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchScriptModel::TorchScriptModel(TorchScriptModel&&) noexcept = default;
TorchScriptModel& TorchScriptModel::operator=(TorchScriptModel&&) noexcept = default;
TorchScriptModel::~TorchScriptModel() = default;

int64_t TorchScriptModel::ParameterInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

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

// ---- inputs and the metric ----

StatusOr<std::vector<std::vector<Tensor>>> token_inputs(const TorchScriptModel& model,
                                                        const std::vector<PackedSequences>& batches) {
  BRISK_ASSIGN_OR_RETURN(std::vector<TorchScriptModel::Argument> args, model.forward_arguments());
  size_t n = args.size();
  if (n > 3 && std::all_of(args.begin() + 3, args.end(), [](const auto& a) { return a.has_default; })) n = 3;
  if (n < 1 || n > 3) {
    std::vector<std::string> names;
    for (const auto& a : args) names.push_back(a.name);
    return absl::InvalidArgumentError(absl::StrCat(
        "forward() takes ", args.size(), " argument(s) after self (", absl::StrJoin(names, ", "),
        "); expected 1, 2 or 3: input_ids, attention_mask, token_type_ids (arguments past the third need defaults)"));
  }
  std::vector<std::vector<Tensor>> out;
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    const PackedSequences& batch = batches[bi];
    const int64_t b = batch.size();
    if (b < 1) return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " is empty; expected a sequence"));
    if (batch.offsets.front() != 0 || batch.offsets.back() != static_cast<int64_t>(batch.input_ids.size()))
      return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " has offsets from ", batch.offsets.front(), " to ",
                                                     batch.offsets.back(), "; expected 0 to ", batch.input_ids.size(),
                                                     " (its token count)"));
    if (!batch.token_type_ids.empty() && batch.token_type_ids.size() != batch.input_ids.size())
      return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " has ", batch.token_type_ids.size(),
                                                     " token_type_ids; expected ", batch.input_ids.size(),
                                                     " (one per token) or none"));
    int64_t t = 0;
    for (int64_t i = 0; i < b; ++i) {
      if (batch.length(i) < 0)
        return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " sequence ", i, " has length ", batch.length(i),
                                                       "; expected offsets that grow"));
      t = std::max(t, batch.length(i));
    }
    if (t == 0)
      return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " has only empty sequences; expected a token"));
    BRISK_ASSIGN_OR_RETURN(Tensor ids, Tensor::zeros({b, t}, DType::kI64));
    BRISK_ASSIGN_OR_RETURN(Tensor mask, Tensor::zeros({b, t}, DType::kI64));
    BRISK_ASSIGN_OR_RETURN(Tensor types, Tensor::zeros({b, t}, DType::kI64));
    for (int64_t i = 0; i < b; ++i) {
      for (int64_t j = 0; j < batch.length(i); ++j) {
        const int64_t src = batch.offsets[i] + j, dst = i * t + j;
        ids.data<int64_t>()[dst] = batch.input_ids[src];
        mask.data<int64_t>()[dst] = 1;
        if (!batch.token_type_ids.empty()) types.data<int64_t>()[dst] = batch.token_type_ids[src];
      }
    }
    std::vector<Tensor> set = {ids, mask, types};
    set.resize(n);
    out.push_back(std::move(set));
  }
  return out;
}

StatusOr<TorchScriptMetric> output_cosine_metric(const TorchScriptModel& reference,
                                                 std::vector<std::vector<Tensor>> inputs) {
  if (inputs.empty())
    return absl::InvalidArgumentError("output_cosine_metric has no input sets; expected at least one");
  struct Case {
    std::vector<Tensor> inputs;
    std::vector<int64_t> shape;  // of the reference's first output
    Tensor rows;                 // the reference's rows
  };
  auto cases = std::make_shared<std::vector<Case>>();
  for (size_t i = 0; i < inputs.size(); ++i) {
    BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, reference.forward(inputs[i]));
    if (outputs.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("the reference's forward() on input set ", i, " returned no tensor; expected one"));
    BRISK_ASSIGN_OR_RETURN(Tensor rows, cosine_rows(outputs[0], inputs[i]));
    cases->push_back({std::move(inputs[i]), outputs[0].shape(), rows});
  }
  return TorchScriptMetric([cases](const TorchScriptModel& candidate) -> StatusOr<double> {
    double sum = 0;
    int64_t count = 0;
    for (size_t i = 0; i < cases->size(); ++i) {
      const Case& c = (*cases)[i];
      BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, candidate.forward(c.inputs));
      if (outputs.empty() || outputs[0].shape() != c.shape)
        return absl::InvalidArgumentError(
            absl::StrCat("the candidate's first output on input set ", i, " has shape ",
                         outputs.empty() ? std::string("(none)") : outputs[0].shape_string(), "; expected ",
                         shape_str(c.shape), " like the reference's"));
      BRISK_ASSIGN_OR_RETURN(Tensor rows, cosine_rows(outputs[0], c.inputs));
      const int64_t n = rows.dim(0), f = rows.dim(1);
      for (int64_t r = 0; r < n; ++r) sum += row_cosine(rows.data<float>() + r * f, c.rows.data<float>() + r * f, f);
      count += n;
    }
    return count > 0 ? sum / double(count) : 1.0;
  });
}

// ---- sensitivity and pruning ----

StatusOr<SensitivityTable> torchscript_sensitivity(const TorchScriptModel& model,
                                                   const TorchSensitivityOptions& options) {
  if (!options.metric)
    return absl::InvalidArgumentError(
        "torchscript_sensitivity has no metric; expected options.metric "
        "(e.g. output_cosine_metric)");
  if (options.mode != "sweep" && options.mode != "zero")
    return absl::InvalidArgumentError(
        absl::StrCat("sensitivity mode is '", options.mode, "'; expected \"sweep\" or \"zero\""));
  const bool sweep = options.mode == "sweep";
  if (sweep) {
    if (options.levels.empty())
      return absl::InvalidArgumentError("sensitivity sweep has no levels; expected fractions in [0, 1)");
    for (double level : options.levels) BRISK_RETURN_IF_ERROR(check_amount(level, "sensitivity level"));
  }
  BRISK_RETURN_IF_ERROR(select_parameters(TorchScriptAccess::module(model), options.parameters).status());

  SensitivityTable table;
  table.mode = options.mode;
  table.metric_name = options.metric_name;
  BRISK_ASSIGN_OR_RETURN(table.baseline, options.metric(model));

  BRISK_ASSIGN_OR_RETURN(TorchScriptModel work, model.clone());
  BRISK_ASSIGN_OR_RETURN(std::vector<Selected> selected,
                         select_parameters(TorchScriptAccess::module(work), options.parameters));
  const int64_t per_parameter = sweep ? static_cast<int64_t>(options.levels.size()) : 1;
  const int64_t total = per_parameter * static_cast<int64_t>(selected.size());
  int64_t done = 0;
  torch::NoGradGuard no_grad;
  for (Selected& s : selected) {
    at::Tensor original;
    try {
      original = s.value.detach().clone();
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("parameter '", s.name, "' cannot be copied: ", reason(e)));
    }
    const int64_t numel = original.numel();
    at::Tensor scores_source;
    Tensor scores;
    if (sweep && numel > 0) {
      BRISK_ASSIGN_OR_RETURN(scores, magnitude_scores(original, scores_source));
    }
    for (int64_t k = 0; k < per_parameter; ++k) {
      SensitivityPoint point;
      point.unit = point.series = s.name;
      point.kind = "tensor";
      if (sweep) {
        point.sparsity = options.levels[size_t(k)];
        s.value.copy_(original);
        if (numel > 0) {
          BRISK_ASSIGN_OR_RETURN(Tensor mask, unstructured_mask(scores, point.sparsity));
          BRISK_RETURN_IF_ERROR(apply_parameter_mask(s.value, mask));
          point.parameters_removed = count_pruned(mask);
        }
      } else {
        point.sparsity = 1.0;
        point.parameters_removed = numel;
        s.value.zero_();
      }
      StatusOr<double> metric = options.metric(work);
      if (!metric.ok())
        return Status(metric.status().code(), absl::StrCat("the metric with parameter '", s.name, "' at sparsity ",
                                                           point.sparsity, " failed: ", metric.status().message()));
      point.metric = *metric;
      table.points.push_back(std::move(point));
      ++done;
      if (options.progress) options.progress("sensitivity", done, total);
    }
    s.value.copy_(original);
  }
  return table;
}

StatusOr<TorchPruneResult> torchscript_prune_unstructured(TorchScriptModel& model, const TorchPruneOptions& options) {
  BRISK_RETURN_IF_ERROR(check_amount(options.amount, "torchscript_prune_unstructured"));
  BRISK_ASSIGN_OR_RETURN(std::vector<Selected> selected,
                         select_parameters(TorchScriptAccess::module(model), options.parameters));
  // Every mask first, then the writes: an error leaves the model as it was.
  std::vector<at::Tensor> sources(selected.size());
  std::vector<Tensor> scores(selected.size());
  std::vector<size_t> scored;  // indices into selected with elements
  for (size_t i = 0; i < selected.size(); ++i) {
    if (selected[i].value.numel() == 0) continue;
    BRISK_ASSIGN_OR_RETURN(scores[i], magnitude_scores(selected[i].value, sources[i]));
    scored.push_back(i);
  }
  std::vector<Tensor> masks(selected.size());
  if (options.global) {
    std::vector<Tensor> group;
    for (size_t i : scored) group.push_back(scores[i]);
    BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> group_masks, global_unstructured_masks(group, options.amount));
    for (size_t j = 0; j < scored.size(); ++j) masks[scored[j]] = group_masks[j];
  } else {
    for (size_t i : scored) {
      BRISK_ASSIGN_OR_RETURN(masks[i], unstructured_mask(scores[i], options.amount));
    }
  }
  sources.clear();  // the masks are computed; drop f32 copies (and borrowed views) before writing
  TorchPruneResult result;
  for (size_t i = 0; i < selected.size(); ++i) {
    result.parameters.push_back(selected[i].name);
    result.total += selected[i].value.numel();
    if (selected[i].value.numel() == 0) continue;
    BRISK_RETURN_IF_ERROR(apply_parameter_mask(selected[i].value, masks[i]));
    result.pruned += count_pruned(masks[i]);
  }
  return result;
}

}  // namespace brisk::prune
