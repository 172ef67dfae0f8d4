// The CUDA kernels' launch planning (lib/kernels/cuda/launch.h) on the host: vector widths fall back on odd sizes
// and misaligned pointers, every plan maps each (row, chunk) to exactly one thread (enumerated here exactly as the
// kernels walk it), and grids stay within the hardware limits. Runs in every build, GPU or not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cuda/launch.h"

namespace brisk::kernels::cuda::launch {
namespace {

constexpr bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// How many times the plan's mapping (launch.h, RowPlan) visits each (row, chunk).
std::vector<int> row_plan_visits(const RowPlan& p, int64_t rows) {
  std::vector<int> visits(static_cast<size_t>(rows * p.chunks), 0);
  for (int64_t block = 0; block < p.grid; ++block) {
    for (int64_t ty = 0; ty < p.rows_per_block; ++ty) {
      for (int64_t tx = 0; tx < p.threads_per_row; ++tx) {
        for (int64_t r = block * p.rows_per_block + ty; r < rows; r += p.grid * p.rows_per_block) {
          if (p.iters > 0) {
            for (int64_t k = 0; k < p.iters; ++k) {
              const int64_t c = tx + k * p.threads_per_row;
              if (c < p.chunks) ++visits[static_cast<size_t>(r * p.chunks + c)];
            }
          } else {
            for (int64_t c = tx; c < p.chunks; c += p.threads_per_row) ++visits[static_cast<size_t>(r * p.chunks + c)];
          }
        }
      }
    }
  }
  return visits;
}

// The same for ItemPlan: items i and chunks c.
std::vector<int> item_plan_visits(const ItemPlan& p, int64_t items, int64_t chunks) {
  std::vector<int> visits(static_cast<size_t>(items * chunks), 0);
  for (int64_t block = 0; block < p.grid; ++block) {
    for (int64_t ty = 0; ty < p.block_y; ++ty) {
      for (int64_t tx = 0; tx < p.block_x; ++tx) {
        for (int64_t i = block * p.block_y + ty; i < items; i += p.grid * p.block_y) {
          for (int64_t c = tx; c < chunks; c += p.block_x) ++visits[static_cast<size_t>(i * chunks + c)];
        }
      }
    }
  }
  return visits;
}

bool all_once(const std::vector<int>& visits) {
  for (const int v : visits) {
    if (v != 1) return false;
  }
  return true;
}

TEST_CASE("cuda launch: vector_width takes 16 bytes when cols, stride and every pointer allow it",
          "[kernels][cuda-launch]") {
  const uintptr_t base = 0x7f0000001000;                                  // 4096-aligned, like a device allocation
  CHECK(vector_width(4, 384, 384, {{base, 4}, {base + 4096, 4}}) == 4);   // fp32: float4
  CHECK(vector_width(8, 384, 384, {{base, 2}, {base + 4096, 2}}) == 8);   // fp16: 8 halves
  CHECK(vector_width(8, 1536, 1536, {{base, 2}, {0, 2}}) == 8);           // a null operand never blocks it
  CHECK(vector_width(8, 384, 384, {{base, 2}, {base + 8 * 3, 1}}) == 8);  // int8 output: 8-byte aligned is enough
  CHECK(vector_width(6, 384, 384, {{base, 2}}) == 4);                     // max_width rounds down to a power of two
  CHECK(vector_width(0, 384, 384, {{base, 2}}) == 1);
}

TEST_CASE("cuda launch: vector_width falls back on odd columns, odd strides and misaligned pointers",
          "[kernels][cuda-launch]") {
  const uintptr_t base = 0x7f0000001000;
  CHECK(vector_width(8, 383, 383, {{base, 2}}) == 1);                 // odd cols
  CHECK(vector_width(8, 100, 100, {{base, 2}}) == 4);                 // cols divisible by 4, not 8
  CHECK(vector_width(8, 128, 130, {{base, 2}}) == 2);                 // softmax's ld decides too
  CHECK(vector_width(4, 384, 384, {{base + 4, 4}}) == 1);             // float pointer off by one element
  CHECK(vector_width(4, 384, 384, {{base + 8, 4}}) == 2);             // 8-byte aligned: float2
  CHECK(vector_width(8, 384, 384, {{base + 2, 2}}) == 1);             // half pointer off by one element
  CHECK(vector_width(8, 384, 384, {{base, 2}, {base + 6, 2}}) == 1);  // any one operand decides
  CHECK(vector_width(8, 384, 384, {{base, 2}, {base + 4, 1}}) == 4);  // int8 output 4-byte aligned
  // The kernels are compiled for the full width and 1 only.
  CHECK(vector_width_or_scalar(8, 100, 100, {{base, 2}}) == 1);
  CHECK(vector_width_or_scalar(4, 384, 384, {{base + 8, 4}}) == 1);
  CHECK(vector_width_or_scalar(8, 384, 384, {{base, 2}}) == 8);
}

TEST_CASE("cuda launch: plan_rows uses a warp per short row and a block per long row", "[kernels][cuda-launch]") {
  // fp32 LayerNorm at hidden 384: 96 float4 chunks, 3 per lane -> bucket 4.
  RowPlan p = plan_rows(4096, 384, 4, 8);
  CHECK(p.warp_per_row());
  CHECK(p.rows_per_block == kWarpRowsPerBlock);
  CHECK(p.iters == 4);
  CHECK(p.chunks == 96);
  CHECK(p.grid == 4096 / kWarpRowsPerBlock);
  // fp16 at 1024 columns: 128 chunks of 8, exactly 4 per lane, still a warp.
  p = plan_rows(100, 1024, 8, 4);
  CHECK(p.warp_per_row());
  CHECK(p.iters == 4);
  CHECK(p.grid == 25);
  // fp16 at 4096: 512 chunks, a block per row of 128 threads, 4 chunks each.
  p = plan_rows(100, 4096, 8, 4);
  CHECK_FALSE(p.warp_per_row());
  CHECK(p.rows_per_block == 1);
  CHECK(p.threads_per_row == 128);
  CHECK(p.iters == 4);
  CHECK(p.grid == 100);
  // Scalar fallback (width 1) at 4097 columns: 513 threads would be needed, the cap is 512 -> 9 per thread,
  // more than max_iters: the row streams.
  p = plan_rows(3, 4097, 1, 8);
  CHECK(p.threads_per_row == kMaxRowBlockThreads);
  CHECK(p.iters == 0);
  p = plan_rows(3, 4096, 1, 8);
  CHECK(p.threads_per_row == kMaxRowBlockThreads);
  CHECK(p.iters == 8);
}

TEST_CASE("cuda launch: plan_rows maps every (row, chunk) to exactly one thread", "[kernels][cuda-launch]") {
  for (const int64_t width : {1, 4, 8}) {
    for (const int64_t max_iters : {1, 4, 8}) {
      for (const int64_t cols : {1, 7, 32, 33, 256, 384, 1000, 1024, 1032, 4096, 8200}) {
        if (cols % width != 0) continue;
        for (const int64_t rows : {1, 3, 5, 9}) {
          for (const int64_t max_grid : {int64_t{1}, int64_t{2}, kMaxGridX}) {
            const RowPlan p = plan_rows(rows, cols, width, max_iters, max_grid);
            INFO("width " << width << " max_iters " << max_iters << " cols " << cols << " rows " << rows << " grid cap "
                          << max_grid);
            CHECK(p.chunks == (cols + width - 1) / width);
            CHECK(p.threads_per_row % kWarpSize == 0);
            CHECK(p.threads_per_row * p.rows_per_block <= kMaxRowBlockThreads);
            CHECK((p.rows_per_block == 1 || p.warp_per_row()));
            CHECK((p.iters == 0 || (is_pow2(p.iters) && p.iters <= max_iters)));
            CHECK(p.grid >= 1);
            CHECK(p.grid <= max_grid);
            CHECK(all_once(row_plan_visits(p, rows)));
          }
        }
      }
    }
  }
}

TEST_CASE("cuda launch: grids are capped at the hardware limit and stride beyond it", "[kernels][cuda-launch]") {
  const int64_t huge = int64_t{1} << 40;
  CHECK(plan_rows(huge, 384, 4, 8).grid == kMaxGridX);
  CHECK(plan_rows(huge, 100000, 4, 8).grid == kMaxGridX);
  CHECK(plan_items(huge, 8).grid == kMaxGridX);
  CHECK(plan_flat(huge * 1024, 4).grid == kMaxGridX);  // 2^48 float4 chunks, 256 per block
  CHECK(plan_sequences(huge, 48).grid == kMaxGridX);
  // Just below the cap: no striding needed, one block per row.
  CHECK(plan_rows(kMaxGridX, 100000, 4, 8).grid == kMaxGridX);
  CHECK(plan_rows(kMaxGridX - 1, 100000, 4, 8).grid == kMaxGridX - 1);
  // The cap is a parameter, and a smaller one still covers every row (enumerated above); here with many rows.
  const RowPlan p = plan_rows(1000, 64, 1, 8, 7);
  CHECK(p.grid == 7);
  CHECK(all_once(row_plan_visits(p, 1000)));
}

TEST_CASE("cuda launch: plan_items maps every (item, chunk) to exactly one thread", "[kernels][cuda-launch]") {
  for (const int64_t chunks : {1, 5, 8, 48, 96, 255, 256, 257, 600}) {
    for (const int64_t items : {1, 2, 7, 33}) {
      for (const int64_t lane_multiple : {1, 32}) {
        for (const int64_t max_grid : {int64_t{1}, int64_t{3}, kMaxGridX}) {
          const ItemPlan p = plan_items(items, chunks, 256, lane_multiple, max_grid);
          INFO("chunks " << chunks << " items " << items << " lanes " << lane_multiple << " grid cap " << max_grid);
          CHECK(p.block_x * p.block_y <= 256);
          CHECK(p.block_x % lane_multiple == 0);
          CHECK(p.grid <= max_grid);
          CHECK(all_once(item_plan_visits(p, items, chunks)));
        }
      }
    }
  }
}

TEST_CASE("cuda launch: plan_items with lane_multiple 32 never puts two items in one warp", "[kernels][cuda-launch]") {
  for (const int64_t chunks : {1, 8, 40, 48, 96, 300}) {
    const ItemPlan p = plan_items(100, chunks, 256, kWarpSize);
    INFO("chunks " << chunks);
    // Threads are numbered x-first (threadIdx.y * blockDim.x + threadIdx.x); a warp is 32 consecutive ones.
    const int64_t threads = int64_t{p.block_x} * p.block_y;
    for (int64_t t = 0; t < threads; t += kWarpSize) {
      const int64_t last = std::min(t + kWarpSize, threads) - 1;
      CHECK(t / p.block_x == last / p.block_x);
    }
    CHECK(threads % kWarpSize == 0);  // no partial warp: every __ballot_sync lane exists
  }
}

TEST_CASE("cuda launch: plan_flat covers 0..n-1 once, with the tail in the last chunk", "[kernels][cuda-launch]") {
  for (const int64_t n : {1, 3, 4, 5, 1023, 1024, 1025, 100000}) {
    for (const int64_t width : {1, 4}) {
      for (const int64_t max_grid : {int64_t{1}, int64_t{5}, kMaxGridX}) {
        const FlatPlan p = plan_flat(n, width, 256, max_grid);
        INFO("n " << n << " width " << width << " grid cap " << max_grid);
        std::vector<int> visits(static_cast<size_t>(n), 0);
        for (int64_t block = 0; block < p.grid; ++block) {
          for (int64_t t = 0; t < p.threads; ++t) {
            for (int64_t c = block * p.threads + t; c < p.chunks; c += p.grid * p.threads) {
              for (int64_t i = c * width; i < std::min(c * width + width, n); ++i) ++visits[static_cast<size_t>(i)];
            }
          }
        }
        CHECK(p.grid <= max_grid);
        CHECK(all_once(visits));
      }
    }
  }
}

TEST_CASE("cuda launch: plan_sequences gives each sequence one block and each (chunk, row) one thread",
          "[kernels][cuda-launch]") {
  for (const int64_t chunks : {1, 6, 48, 96, 384, 600}) {
    for (const int64_t batch : {1, 4, 9}) {
      for (const int64_t max_grid : {int64_t{2}, kMaxGridX}) {
        const int64_t seq = 5;
        const ItemPlan p = plan_sequences(batch, chunks, 256, max_grid);
        INFO("chunks " << chunks << " batch " << batch << " grid cap " << max_grid);
        CHECK(p.block_x * p.block_y <= 256);
        CHECK(p.grid == std::min(batch, max_grid));
        // b = blockIdx.x (+ grid); chunk c = threadIdx.x (+ block_x); row t = threadIdx.y (+ block_y).
        std::vector<int> visits(static_cast<size_t>(batch * chunks * seq), 0);
        for (int64_t block = 0; block < p.grid; ++block) {
          for (int64_t b = block; b < batch; b += p.grid) {
            for (int64_t ty = 0; ty < p.block_y; ++ty) {
              for (int64_t tx = 0; tx < p.block_x; ++tx) {
                for (int64_t c = tx; c < chunks; c += p.block_x) {
                  for (int64_t t = ty; t < seq; t += p.block_y)
                    ++visits[static_cast<size_t>((b * chunks + c) * seq + t)];
                }
              }
            }
          }
        }
        CHECK(all_once(visits));
      }
    }
  }
}

}  // namespace
}  // namespace brisk::kernels::cuda::launch
