// CUDA layout kernels of self-attention (EFF-FT's padding rebuild): the QKV rows of the sequences, wherever they
// sit, scattered into zero-padded [batch, heads, max_len, head_dim] Q, K and V (bias added on the way), and the
// padded context gathered back into its rows.
//
// split_qkv_heads is driven by the padded slots (b, h, i) (launch::plan_items, one slot per block row, head_dim in
// 16-byte chunks across threads): every slot of Q, K and V is written exactly once, zeros for i >= lengths[b], and
// each real row of qkv is read once. merge_heads is driven by the output rows (a warp or more per row,
// launch::plan_items with block_x a multiple of 32): a warp finds the row's sequence by a ballot over the
// sequences' [start, start + length) ranges, then copies the row's heads; rows of no sequence are written as zeros,
// so `out` is written exactly once and needs no memset.
#include <cuda_runtime.h>

#include "cuda_kernels.h"
#include "kernel_util.cuh"

namespace brisk::kernels::cuda {
namespace {

struct LayoutArgs {
  const int32_t* starts;
  const int32_t* lengths;
  int64_t batch;
  int64_t max_len;
  int64_t heads;
  int64_t head_dim;
};

__device__ __forceinline__ int64_t clamped_length(const LayoutArgs& a, int64_t b) {
  const int64_t len = a.lengths[b];
  return len < 0 ? 0 : (len > a.max_len ? a.max_len : len);
}

template <int kVec, typename D>
__device__ __forceinline__ void copy_biased(const D* src, const D* bias, D* dst) {
  float v[kVec];
  load_floats<kVec>(src, v);
  if (bias != nullptr) {
    float b[kVec];
    load_floats<kVec>(bias, b);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] += b[j];
  }
  store_floats<kVec>(dst, v);
}

// Mapping: launch::ItemPlan over slots s = (b * heads + h) * max_len + i and head_dim chunks.
template <typename D, int kVec>
__global__ void __launch_bounds__(1024)
    split_qkv_heads_kernel(const D* qkv, const D* bias, LayoutArgs a, D* q, D* k, D* v) {
  const int64_t slots = a.batch * a.heads * a.max_len;
  const int64_t chunks = a.head_dim / kVec;
  const int64_t hidden = a.heads * a.head_dim;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; s < slots;
       s += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const int64_t i = s % a.max_len;
    const int64_t bh = s / a.max_len;
    const int64_t h = bh % a.heads;
    const int64_t b = bh / a.heads;
    const int64_t offset = s * a.head_dim;
    if (i < clamped_length(a, b)) {
      const D* row = qkv + (static_cast<int64_t>(a.starts[b]) + i) * 3 * hidden + h * a.head_dim;
      const D* hb = bias != nullptr ? bias + h * a.head_dim : nullptr;
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        const int64_t d = c * kVec;
        copy_biased<kVec>(row + d, hb != nullptr ? hb + d : nullptr, q + offset + d);
        copy_biased<kVec>(row + hidden + d, hb != nullptr ? hb + hidden + d : nullptr, k + offset + d);
        copy_biased<kVec>(row + 2 * hidden + d, hb != nullptr ? hb + 2 * hidden + d : nullptr, v + offset + d);
      }
    } else {
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        const int64_t d = c * kVec;
        store_zeros<kVec>(q + offset + d);
        store_zeros<kVec>(k + offset + d);
        store_zeros<kVec>(v + offset + d);
      }
    }
  }
}

// Mapping: launch::ItemPlan over output rows with block_x a multiple of 32 (each warp votes for its own row) and
// chunks of the row's heads * head_dim columns.
template <typename D, int kVec>
__global__ void __launch_bounds__(1024) merge_heads_kernel(const D* padded, LayoutArgs a, int64_t rows, D* out) {
  const int64_t hidden = a.heads * a.head_dim;
  const int64_t chunks = hidden / kVec;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    // The first sequence whose rows hold r: uniform over the warp (same r on every lane).
    int64_t seq = -1;
    for (int64_t base = 0; base < a.batch; base += 32) {
      const int64_t b = base + lane;
      bool hit = false;
      if (b < a.batch) {
        const int64_t start = a.starts[b];
        hit = start <= r && r < start + clamped_length(a, b);
      }
      const unsigned mask = __ballot_sync(0xffffffffu, hit);
      if (mask != 0u) {
        seq = base + __ffs(static_cast<int>(mask)) - 1;
        break;
      }
    }
    D* dst = out + r * hidden;
    if (seq >= 0) {
      const int64_t i = r - a.starts[seq];
      const D* src = padded + (seq * a.heads * a.max_len + i) * a.head_dim;  // head 0 of slot (seq, 0, i)
      const int head_dim = static_cast<int>(a.head_dim);  // hidden fits in 32 bits; 32-bit division is cheaper
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        const int col = static_cast<int>(c * kVec);
        const int h = col / head_dim;
        const int d = col - h * head_dim;
        float v[kVec];
        load_floats<kVec>(src + h * a.max_len * a.head_dim + d, v);
        store_floats<kVec>(dst + col, v);
      }
    } else {
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) store_zeros<kVec>(dst + c * kVec);
    }
  }
}

}  // namespace

template <typename T>
Status split_qkv_heads(const T* qkv, const T* bias, const AttentionRows& sequences, int64_t heads, int64_t head_dim,
                       T* q, T* k, T* v) {
  if (sequences.batch <= 0 || sequences.max_len <= 0 || heads <= 0 || head_dim <= 0) return absl::OkStatus();
  const LayoutArgs args{sequences.starts, sequences.lengths, sequences.batch, sequences.max_len, heads, head_dim};
  constexpr int64_t kSize = sizeof(T);
  const int width = launch::vector_width_or_scalar(
      kFullWidth<T>, head_dim, head_dim,
      {{address(qkv), kSize}, {address(bias), kSize}, {address(q), kSize}, {address(k), kSize}, {address(v), kSize}});
  using D = DeviceType<T>;
  const int64_t slots = sequences.batch * heads * sequences.max_len;
  const LaunchCheck check("split_qkv_heads");
  if (width == kFullWidth<T>) {
    constexpr int kVec = kFullWidth<T>;
    const launch::ItemPlan plan = launch::plan_items(slots, head_dim / kVec);
    split_qkv_heads_kernel<D, kVec><<<grid_dim(plan.grid), dim3(plan.block_x, plan.block_y), 0, cudaStreamPerThread>>>(
        device_ptr(qkv), device_ptr(bias), args, device_ptr(q), device_ptr(k), device_ptr(v));
  } else {
    const launch::ItemPlan plan = launch::plan_items(slots, head_dim);
    split_qkv_heads_kernel<D, 1><<<grid_dim(plan.grid), dim3(plan.block_x, plan.block_y), 0, cudaStreamPerThread>>>(
        device_ptr(qkv), device_ptr(bias), args, device_ptr(q), device_ptr(k), device_ptr(v));
  }
  return check.status();
}

template <typename T>
Status merge_heads(const T* padded, const AttentionRows& sequences, int64_t rows, int64_t heads, int64_t head_dim,
                   T* out) {
  if (rows <= 0 || heads <= 0 || head_dim <= 0) return absl::OkStatus();
  const LayoutArgs args{sequences.starts, sequences.lengths, sequences.batch, sequences.max_len, heads, head_dim};
  constexpr int64_t kSize = sizeof(T);
  const int width = launch::vector_width_or_scalar(kFullWidth<T>, head_dim, head_dim,
                                                   {{address(padded), kSize}, {address(out), kSize}});
  using D = DeviceType<T>;
  const int64_t hidden = heads * head_dim;
  const LaunchCheck check("merge_heads");
  if (width == kFullWidth<T>) {
    constexpr int kVec = kFullWidth<T>;
    const launch::ItemPlan plan = launch::plan_items(rows, hidden / kVec, 256, launch::kWarpSize);
    merge_heads_kernel<D, kVec><<<grid_dim(plan.grid), dim3(plan.block_x, plan.block_y), 0, cudaStreamPerThread>>>(
        device_ptr(padded), args, rows, device_ptr(out));
  } else {
    const launch::ItemPlan plan = launch::plan_items(rows, hidden, 256, launch::kWarpSize);
    merge_heads_kernel<D, 1><<<grid_dim(plan.grid), dim3(plan.block_x, plan.block_y), 0, cudaStreamPerThread>>>(
        device_ptr(padded), args, rows, device_ptr(out));
  }
  return check.status();
}

#define BRISK_INSTANTIATE(T)                                                                                  \
  template Status split_qkv_heads<T>(const T*, const T*, const AttentionRows&, int64_t, int64_t, T*, T*, T*); \
  template Status merge_heads<T>(const T*, const AttentionRows&, int64_t, int64_t, int64_t, T*);
BRISK_INSTANTIATE(float)
BRISK_INSTANTIATE(float16_t)
BRISK_INSTANTIATE(bfloat16_t)
#undef BRISK_INSTANTIATE

}  // namespace brisk::kernels::cuda
