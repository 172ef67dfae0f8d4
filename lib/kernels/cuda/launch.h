// Private to lib/kernels/cuda: the launch configurations of the fused kernels, and the attribution of launch
// errors, as pure host functions (no CUDA headers), so that vector widths, thread mappings, grid caps and error
// messages can be unit-tested on a CPU (tests/kernels/cuda_launch_test.cc, cuda_launch_errors_test.cc). Every
// kernel in lib/kernels/cuda/*.cu follows the mapping documented on the plan it is launched with; the tests
// enumerate exactly that mapping.
//
//   const int w = launch::vector_width(16 / sizeof(T), cols, cols, {{addr(x), sizeof(T)}, {addr(out), sizeof(T)}});
//   const launch::RowPlan p = launch::plan_rows(rows, cols, w, /*max_iters=*/4);
//   LaunchCheck check("kernel");                        // kernel_util.cuh: takes an error left pending before
//   kernel<<<p.grid, dim3(p.threads_per_row, p.rows_per_block)>>>(...);
//   return check.status();                              // attribute_launch_error / launch_error_message below
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace brisk::kernels::cuda::launch {

inline constexpr int kWarpSize = 32;
// Hardware limits of every architecture brisk builds for (sm_80, sm_90).
inline constexpr int64_t kMaxGridX = 2147483647;  // 2^31 - 1
inline constexpr int64_t kMaxGridYZ = 65535;
inline constexpr int kMaxBlockThreads = 1024;
// Threads of a block-per-row block: a row is held in registers, and 512 threads leave each 128 registers.
inline constexpr int kMaxRowBlockThreads = 512;
// Rows per block when one warp works on one row.
inline constexpr int kWarpRowsPerBlock = 4;

inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
// The largest power of two <= v (v >= 1).
inline constexpr int64_t floor_pow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}
// The smallest power of two >= v (v >= 1).
inline constexpr int64_t ceil_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// One array a kernel reads or writes with vector accesses: its base address (0 for a null pointer, which is never
// dereferenced) and its element size in bytes.
struct Operand {
  uintptr_t address;
  int64_t elem_bytes;
};

// The elements per vector access: the largest power of two w <= max_width such that w divides cols and the row
// stride (so that every row starts aligned and no vector straddles a row end) and every operand's base address is
// a multiple of w * elem_bytes. 1 when nothing larger fits; max_width is rounded down to a power of two.
inline int vector_width(int64_t max_width, int64_t cols, int64_t stride, std::initializer_list<Operand> operands) {
  int64_t w = floor_pow2(std::max<int64_t>(max_width, 1));
  for (; w > 1; w /= 2) {
    if (cols % w != 0 || stride % w != 0) continue;
    bool aligned = true;
    for (const Operand& op : operands) {
      const uint64_t bytes = static_cast<uint64_t>(w * op.elem_bytes);
      if (op.address % bytes != 0) aligned = false;
    }
    if (aligned) break;
  }
  return static_cast<int>(w);
}

// vector_width restricted to the widths a kernel is compiled for: `full` or 1.
inline int vector_width_or_scalar(int64_t full, int64_t cols, int64_t stride, std::initializer_list<Operand> operands) {
  return vector_width(full, cols, stride, operands) == full ? static_cast<int>(full) : 1;
}

// One row per warp (short rows) or per block (long rows), the row's vector chunks spread over the row's threads.
// Mapping (blockDim = {threads_per_row, rows_per_block}):
//   rows    r = blockIdx.x * rows_per_block + threadIdx.y, then r += grid * rows_per_block while r < rows
//   chunks  iters > 0: c = threadIdx.x + k * threads_per_row for k in [0, iters), those with c < chunks; the row
//                      stays in registers (iters * width values per thread) and memory is read once.
//           iters == 0 (streaming, rows too long for registers): c = threadIdx.x, c += threads_per_row while
//                      c < chunks; the kernel reads the row once per pass.
// A chunk is `width` consecutive columns: columns [c * width, c * width + width).
struct RowPlan {
  int threads_per_row = kWarpSize;  // blockDim.x: 32 (warp per row) or a multiple of 32 (block per row)
  int rows_per_block = 1;           // blockDim.y: > 1 only for warp per row
  int iters = 1;                    // register-resident chunks per thread; 0: streaming
  int64_t chunks = 0;               // vector chunks per row, ceil(cols / width)
  int64_t grid = 1;                 // gridDim.x
  bool warp_per_row() const { return threads_per_row == kWarpSize; }
};

// max_iters: the most register-resident chunks per thread the kernel is compiled for, a power of two (rounded down);
// iters is always a power of two <= max_iters, or 0.
inline RowPlan plan_rows(int64_t rows, int64_t cols, int64_t width, int64_t max_iters, int64_t max_grid = kMaxGridX) {
  RowPlan p;
  width = std::max<int64_t>(width, 1);
  max_iters = floor_pow2(std::max<int64_t>(max_iters, 1));
  p.chunks = ceil_div(std::max<int64_t>(cols, 1), width);
  max_grid = std::max<int64_t>(max_grid, 1);
  if (p.chunks <= kWarpSize * max_iters) {
    p.threads_per_row = kWarpSize;
    p.rows_per_block = kWarpRowsPerBlock;
    p.iters = static_cast<int>(ceil_pow2(ceil_div(p.chunks, kWarpSize)));
  } else {
    const int64_t threads = std::min<int64_t>(kMaxRowBlockThreads, round_up(ceil_div(p.chunks, max_iters), kWarpSize));
    const int64_t needed = ceil_div(p.chunks, threads);
    p.threads_per_row = static_cast<int>(threads);
    p.rows_per_block = 1;
    p.iters = needed <= max_iters ? static_cast<int>(ceil_pow2(needed)) : 0;
  }
  p.grid = std::clamp<int64_t>(ceil_div(std::max<int64_t>(rows, 1), p.rows_per_block), 1, max_grid);
  return p;
}

// Independent items (rows, attention slots), each `chunks` vector chunks wide, several items per block.
// Mapping (blockDim = {block_x, block_y}):
//   items   i = blockIdx.x * block_y + threadIdx.y, then i += grid * block_y while i < items
//   chunks  c = threadIdx.x, c += block_x while c < chunks
// With lane_multiple == 32, block_x is a multiple of the warp size, so a warp never spans two items (kernels that
// vote within a warp per item).
struct ItemPlan {
  int block_x = 1;
  int block_y = 1;
  int64_t grid = 1;
};

inline ItemPlan plan_items(int64_t items, int64_t chunks, int64_t threads = 256, int64_t lane_multiple = 1,
                           int64_t max_grid = kMaxGridX) {
  ItemPlan p;
  threads = std::clamp<int64_t>(threads, 1, kMaxBlockThreads);
  lane_multiple = std::clamp<int64_t>(lane_multiple, 1, threads);
  const int64_t x = std::min(round_up(std::max<int64_t>(chunks, 1), lane_multiple), threads - threads % lane_multiple);
  p.block_x = static_cast<int>(x);
  p.block_y = static_cast<int>(std::max<int64_t>(threads / x, 1));
  p.grid = std::clamp<int64_t>(ceil_div(std::max<int64_t>(items, 1), p.block_y), 1, std::max<int64_t>(max_grid, 1));
  return p;
}

// A flat array of n elements in chunks of `width`: threads per block and a grid-stride grid over the chunks.
// Mapping: c = blockIdx.x * threads + threadIdx.x, c += grid * threads while c < ceil(n / width); the last
// chunk may be partial (the kernel does its n % width tail element by element).
struct FlatPlan {
  int threads = 256;
  int64_t chunks = 0;
  int64_t grid = 1;
};

inline FlatPlan plan_flat(int64_t n, int64_t width, int64_t threads = 256, int64_t max_grid = kMaxGridX) {
  FlatPlan p;
  p.threads = static_cast<int>(std::clamp<int64_t>(threads, 1, kMaxBlockThreads));
  p.chunks = ceil_div(std::max<int64_t>(n, 0), std::max<int64_t>(width, 1));
  p.grid = std::clamp<int64_t>(ceil_div(std::max<int64_t>(p.chunks, 1), p.threads), 1, std::max<int64_t>(max_grid, 1));
  return p;
}

// One block per sequence for pooling: block_x threads across the dim's chunks, block_y groups of them splitting
// the sequence's rows (row t goes to threadIdx.y == t % block_y), partial sums reduced in shared memory.
// Mapping: b = blockIdx.x, b += grid while b < batch; chunks as in ItemPlan; rows t = threadIdx.y, t += block_y.
inline ItemPlan plan_sequences(int64_t batch, int64_t chunks, int64_t threads = 256, int64_t max_grid = kMaxGridX) {
  // At most 64 threads across the chunks (they loop over the rest), so that block_y can split the rows: a small
  // batch has few blocks, and each must read its sequence's rows in parallel.
  ItemPlan p = plan_items(batch, std::min<int64_t>(chunks, 64), threads, 1, max_grid);
  p.grid = std::clamp<int64_t>(batch, 1, std::max<int64_t>(max_grid, 1));
  return p;
}

// Launch errors. cudaGetLastError after a launch returns the thread's last error, which need not be the launch's
// own: a call before it may have left one pending, and a fault inside a kernel that already ran on the device (on
// any thread's stream) is sticky: every later CUDA call returns it, launches included. The error codes below are
// cudaError_t values (kernel_util.cuh checks them against the enum).
inline constexpr int kCudaSuccess = 0;
inline constexpr int kCudaErrorMemoryAllocation = 2;
inline constexpr int kCudaErrorInvalidConfiguration = 9;
inline constexpr int kCudaErrorLaunchOutOfResources = 701;
// The device faults: each "leaves the process in an inconsistent state", and only an asynchronous kernel fault (or
// the hardware) raises one, never a launch's configuration.
inline constexpr int kCudaErrorECCUncorrectable = 214;
inline constexpr int kCudaErrorContained = 226;
inline constexpr int kCudaErrorIllegalAddress = 700;
inline constexpr int kCudaErrorLaunchTimeout = 702;
inline constexpr int kCudaErrorAssert = 710;
inline constexpr int kCudaErrorHardwareStackError = 714;
inline constexpr int kCudaErrorIllegalInstruction = 715;
inline constexpr int kCudaErrorMisalignedAddress = 716;
inline constexpr int kCudaErrorInvalidAddressSpace = 717;
inline constexpr int kCudaErrorInvalidPc = 718;
inline constexpr int kCudaErrorLaunchFailure = 719;
inline constexpr int kCudaErrorTensorMemoryLeak = 721;
inline constexpr int kCudaErrorExternalDevice = 911;
inline constexpr int kDeviceFaults[] = {kCudaErrorECCUncorrectable,
                                        kCudaErrorContained,
                                        kCudaErrorIllegalAddress,
                                        kCudaErrorLaunchTimeout,
                                        kCudaErrorAssert,
                                        kCudaErrorHardwareStackError,
                                        kCudaErrorIllegalInstruction,
                                        kCudaErrorMisalignedAddress,
                                        kCudaErrorInvalidAddressSpace,
                                        kCudaErrorInvalidPc,
                                        kCudaErrorLaunchFailure,
                                        kCudaErrorTensorMemoryLeak,
                                        kCudaErrorExternalDevice};

inline bool is_device_fault(int code) {
  for (const int fault : kDeviceFaults) {
    if (code == fault) return true;
  }
  return false;
}

// Whose error a launch check saw.
enum class LaunchFault {
  kNone,          // the kernel was launched
  kLaunch,        // the launch itself failed: its configuration, resources, no image for this GPU
  kEarlierError,  // an error an earlier call on this thread left pending (not a device fault)
  kDeviceFault,   // a kernel that ran before faulted (any thread's): the device is unusable
};

// `pending`: the error taken (cudaGetLastError) just before the launch, kCudaSuccess when none was pending or the
// check did not look; `after`: the error taken just after it. A device fault is never the launch's, whichever of
// the two shows it; a pending error is the earlier call's (the launch's own, if any, is then `after`, since taking
// the pending one cleared it).
inline LaunchFault attribute_launch_error(int pending, int after) {
  if (is_device_fault(pending) || is_device_fault(after)) return LaunchFault::kDeviceFault;
  if (pending != kCudaSuccess) return LaunchFault::kEarlierError;
  if (after != kCudaSuccess) return LaunchFault::kLaunch;
  return LaunchFault::kNone;
}

// A CUDA error as the runtime names it (cudaGetErrorName, cudaGetErrorString).
struct CudaError {
  int code = kCudaSuccess;
  std::string_view name;
  std::string_view text;
};

// The message of a launch check that saw an error, attributed by attribute_launch_error; "" for kNone.
inline std::string launch_error_message(std::string_view kernel, const CudaError& pending, const CudaError& after) {
  auto named = [](const CudaError& e) {
    std::string s(e.name);
    s += " (";
    s += e.text;
    s += ")";
    return s;
  };
  std::string k = "CUDA kernel ";
  k += kernel;
  switch (attribute_launch_error(pending.code, after.code)) {
    case LaunchFault::kNone: return "";
    case LaunchFault::kLaunch: return k + " failed to launch: " + named(after);
    case LaunchFault::kDeviceFault:
      return k + " was not run: an earlier asynchronous CUDA error, " +
             named(is_device_fault(pending.code) ? pending : after) +
             ", raised by a kernel queued before it on this device (on any thread's stream), not by this launch; the "
             "device is unusable from here on: expected a process restart, and the faulting kernel found (rerun "
             "with CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer)";
    case LaunchFault::kEarlierError:
      return k +
             (after.code == kCudaSuccess ? " was launched, but"
                                         : " also failed to launch (" + named(after) + "), and") +
             " an earlier CUDA error was pending on this thread: " + named(pending) +
             ", left by a call made before the launch and not by it; expected every CUDA call's error to be taken "
             "where it happens";
  }
  return "";
}

}  // namespace brisk::kernels::cuda::launch
