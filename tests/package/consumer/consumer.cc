// Uses the installed C++ API: a Tensor round trip and a clear error for a missing model.
#include <cstdio>

#include "brisk/core/tensor.h"
#include "brisk/runtime/runtime.h"

int main() {
  auto t = brisk::Tensor::zeros({2, 3}, brisk::DType::kF32);
  if (!t.ok() || t->numel() != 6) return 1;
  brisk::RuntimeOptions opts;
  opts.model_dir = "/nonexistent/model";
  auto rt = brisk::Runtime::create(opts);
  if (rt.ok()) return 2;
  std::printf("consumer_cpp ok: %s\n", std::string(rt.status().message()).c_str());
  return 0;
}
