// embed_layer_norm: argument checks and the one dispatch point on the device.
#include "brisk/kernels/embedding.h"

#include "cpu/cpu_ops.h"
#include "cuda/cuda_kernels.h"
#include "dispatch.h"

namespace brisk::kernels {

template <typename T>
Status embed_layer_norm(Device device, const EmbeddingTables<T>& tables, const int32_t* ids, const int32_t* type_ids,
                        const int32_t* positions, float epsilon, T* out, int64_t rows) {
  constexpr const char* kOp = "embed_layer_norm";
  BRISK_RETURN_IF_ERROR(kernels::check_sizes(kOp, {{"rows", rows}, {"tables.hidden", tables.hidden}}));
  if (rows == 0 || tables.hidden == 0) return absl::OkStatus();
  BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"tables.position", tables.position},
                                                      {"tables.gamma", tables.gamma},
                                                      {"tables.beta", tables.beta},
                                                      {"positions", positions},
                                                      {"out", out}}));
  if (tables.word != nullptr) BRISK_RETURN_IF_ERROR(kernels::check_pointers(kOp, {{"ids", ids}}));
  switch (device) {
    case Device::kCPU:
      BRISK_RETURN_IF_ERROR(kernels::cpu_needs_f32<T>(kOp));
      if constexpr (std::is_same_v<T, float>) {
        kernels::cpu::embed_layer_norm(tables, ids, type_ids, positions, epsilon, out, rows);
      }
      return absl::OkStatus();
    case Device::kCUDA: return kernels::cuda::embed_layer_norm(tables, ids, type_ids, positions, epsilon, out, rows);
  }
  return kernels::unknown_device(kOp, device);
}

#define BRISK_INSTANTIATE(T)                                                                                       \
  template BRISK_API Status embed_layer_norm<T>(Device, const EmbeddingTables<T>&, const int32_t*, const int32_t*, \
                                                const int32_t*, float, T*, int64_t);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels
