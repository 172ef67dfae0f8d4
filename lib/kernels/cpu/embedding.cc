// embed_layer_norm on the CPU: the gather and sum over parallel rows, then the LayerNorm kernel in place.
#include <algorithm>

#include "brisk/core/parallel.h"
#include "cpu_ops.h"

namespace brisk::kernels::cpu {

void embed_layer_norm(const EmbeddingTables<float>& t, const int32_t* ids, const int32_t* type_ids,
                      const int32_t* positions, float epsilon, float* out, int64_t rows) {
  const int64_t h = t.hidden;
  parallel_for(0, rows, 32, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* o = out + r * h;
      if (t.word != nullptr) std::copy_n(t.word + int64_t{ids[r]} * h, h, o);
      const float* p = t.position + int64_t{positions[r]} * h;
      for (int64_t j = 0; j < h; ++j) o[j] += p[j];
      if (t.token_type != nullptr) {
        const float* ty = t.token_type + (type_ids != nullptr ? int64_t{type_ids[r]} : 0) * h;
        for (int64_t j = 0; j < h; ++j) o[j] += ty[j];
      }
    }
  });
  layer_norm_bias_residual(out, nullptr, nullptr, t.gamma, t.beta, epsilon, out, rows, h);
}

}  // namespace brisk::kernels::cpu
