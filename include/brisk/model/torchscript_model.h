// Any TorchScript module (torch.jit.save), run and edited through libtorch: the model brisk runs when it does not run
// a model natively (brisk/runtime/torchscript_backend.h), and what brisk/prune/torchscript.h prunes. Tensors cross
// as brisk Tensors; no torch type appears here.
//
//   BRISK_ASSIGN_OR_RETURN(TorchScriptModel model, TorchScriptModel::load("model.pt"));
//   BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> out, model.forward({ids, mask}));
//   BRISK_ASSIGN_OR_RETURN(Tensor w, model.parameter("encoder.0.linear.weight"));   // an f32 copy
//
// A build without libtorch (BRISK_WITH_TORCH=OFF), or one by clang (see lib/CMakeLists.txt), returns Unimplemented
// from every function that needs it, naming the option.
//
// Thread safety: a TorchScriptModel may be read (forward, parameter) from several threads; set_parameter and save
// need exclusive access. clone() gives an independent copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

class BRISK_API TorchScriptModel {
 public:
  // Errors name the path: missing file (NotFound), not a TorchScript archive or a truncated one (InvalidArgument).
  // The module is put in eval mode (dropout off), as inference and sensitivity analysis need.
  static StatusOr<TorchScriptModel> load(const std::string& path);
  TorchScriptModel(TorchScriptModel&&) noexcept;
  TorchScriptModel& operator=(TorchScriptModel&&) noexcept;
  ~TorchScriptModel();

  // A deep copy (parameters included).
  StatusOr<TorchScriptModel> clone() const;
  // Every named parameter, recursively ("layer.0.weight"), floating or not, in module order.
  std::vector<std::string> parameter_names() const;
  // A parameter as an owned contiguous f32 brisk Tensor; an error for a non-float parameter or an unknown name.
  StatusOr<Tensor> parameter(const std::string& name) const;
  // Overwrites a floating parameter in place (converted to its dtype); the shape must match.
  Status set_parameter(const std::string& name, const Tensor& value);
  // Runs forward() on brisk tensors (f32, i64, i32 become the same torch dtypes) and returns its outputs: a
  // tensor, or the tensors of a tuple/list/dict output in order, as owned f32 copies.
  // None entries of a tuple/list/dict output are skipped, nested tuples/lists/dicts are flattened in order; any
  // other output (an int, a string) is an error.
  StatusOr<std::vector<Tensor>> forward(const std::vector<Tensor>& inputs) const;
  Status save(const std::string& path) const;

  // The arguments of forward() after self, from its schema: names, types, and whether each has a default value.
  // An error when the module has no forward() method.
  struct Argument {
    std::string name;
    bool has_default = false;
    std::string type;     // as Python annotates it: "Tensor", "Optional[Tensor]", "float", "List[int]"
    bool tensor = false;  // type is Tensor or Optional[Tensor]: forward() takes a tensor here
  };
  StatusOr<std::vector<Argument>> forward_arguments() const;

  // Every named parameter with its shape and torch dtype name ("Float", "Half", "Long"), in module order.
  struct ParameterInfo {
    std::string name;
    std::vector<int64_t> shape;
    std::string dtype;
    bool floating = false;
    int64_t numel() const {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      return n;
    }
  };
  std::vector<ParameterInfo> parameter_info() const;

 private:
  struct Impl;
  explicit TorchScriptModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk
