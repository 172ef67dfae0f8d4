// Private to lib/kernels/cuda: the calling thread's cuBLAS and cuBLASLt state (handles, workspace, cached matmul
// plans) and a small RAII holder for memory from brisk's CUDA caching allocator.
//
//   BRISK_ASSIGN_OR_RETURN(BlasContext* ctx, blas_context());   // created on the thread's first call
//   BRISK_RETURN_IF_ERROR(ctx->matmul(shape, &alpha, w, x, &beta, y, bias));
//
// Every CUDA op runs on cudaStreamPerThread, so one context per (thread, device) is one context per stream: the
// handles are bound to that stream and the workspace is only ever used in that stream's order, which is what lets
// cuBLAS and cuBLASLt share it. Steady-state matmuls do no heuristic search: each context keeps the descriptors,
// layouts and the algorithm the heuristic picked per MatmulShape with its row count (n) replaced by the count's
// bucket (plan_cache.h), at most kMaxPlans of them, the least recently used evicted first. Each row count of a
// bucket is checked against the bucket's algorithm once (cublasLtMatmulAlgoCheck: valid for the problem, and its
// workspace within ours); a count that fails it gets a plan of its own.
//
// Setup under a memory cap: the 32 MiB workspace is taken before any handle is created, and a context whose setup
// failed (OUT_OF_MEMORY) is kept, with whatever it did create, and completed by the thread's next blas_context()
// call. A failed setup queues no work, destroys nothing and synchronises nothing, however often it is retried.
//
// Lifetime: a worker thread's contexts are destroyed when it exits (after its stream drains). The main thread's, and
// any destroyed while the process is exiting, are leaked on purpose: at that point the CUDA runtime may already be
// unloading, and destroying handles or freeing memory into a torn-down runtime crashes; the driver reclaims all
// of it with the process anyway.
//
// Thread safety: a BlasContext belongs to its thread; blas_context() may be called concurrently.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "brisk/core/half.h"
#include "brisk/core/status.h"
#include "plan_cache.h"

namespace brisk::kernels::cuda {

// The cuBLAS data type of an activation element type.
template <typename T>
constexpr cudaDataType cuda_type() {
  if constexpr (std::is_same_v<T, float>) {
    return CUDA_R_32F;
  } else if constexpr (std::is_same_v<T, float16_t>) {
    return CUDA_R_16F;
  } else {
    static_assert(std::is_same_v<T, bfloat16_t>);
    return CUDA_R_16BF;
  }
}

// INTERNAL naming the failed call and cuBLAS's status name ("CUBLAS_STATUS_NOT_SUPPORTED"); OK for SUCCESS.
Status cublas_status(cublasStatus_t status, absl::string_view what);
// INTERNAL naming the failed call and the CUDA error; OK for cudaSuccess.
Status cuda_status(cudaError_t status, absl::string_view what);

// The largest power of two dividing the address, capped at 256 (cuBLASLt's default assumption); 256 for null.
uint32_t pointer_alignment(const void* p);

// Memory from brisk::allocate(Device::kCUDA), returned to the caching allocator on destruction. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // OUT_OF_MEMORY (the allocator's status) past the device's cap.
  static StatusOr<DeviceBuffer> allocate(size_t bytes);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) { other.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as(size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(ptr_) + byte_offset);
  }
  size_t size() const { return bytes_; }
  void reset();

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Rounds a byte count up to 256, the alignment cuBLAS(Lt) wants for every operand carved out of one buffer.
constexpr size_t align256(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

// One cuBLASLt matmul, always in the "TN" form every brisk Linear maps to (and that int8 IMMA kernels require):
//   D[m, n] = epilogue(alpha * op(A) · B + beta * C + bias), all column-major, where
//   A is k x m (ld lda) used transposed, B is k x n (ld ldb), C = D is m x n (ld ldc), bias has m elements.
// A row-major y[rows, out] = x[rows, in] · W[out, in]ᵀ is exactly this with A = W (W row-major is k x m
// column-major), B = x, m = out, n = rows, k = in, ldc = ldy.
struct MatmulShape {
  cudaDataType ab_type = CUDA_R_32F;  // A and B
  cudaDataType cd_type = CUDA_R_32F;  // C and D (and the bias, which cuBLASLt types as D outside IMMA/fp8)
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType scale_type = CUDA_R_32F;  // alpha and beta
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  // The pointers' alignments (pointer_alignment), which the heuristic must know: an algorithm picked for 16-byte
  // aligned operands may fault or misread on less.
  uint32_t align_a = 256, align_b = 256, align_cd = 256, align_bias = 256;

  friend bool operator==(const MatmulShape&, const MatmulShape&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const MatmulShape& s) {
    return H::combine(std::move(h), static_cast<int>(s.ab_type), static_cast<int>(s.cd_type),
                      static_cast<int>(s.compute), static_cast<int>(s.scale_type), s.m, s.n, s.k, s.lda, s.ldb, s.ldc,
                      static_cast<uint32_t>(s.epilogue), s.align_a, s.align_b, s.align_cd, s.align_bias);
  }
};

// Whether an epilogue reads CUBLASLT_MATMUL_DESC_BIAS_POINTER.
bool epilogue_has_bias(cublasLtEpilogue_t epilogue);

// The plans a context keeps; past this many the least recently used goes.
inline constexpr size_t kMaxPlans = 512;

class BlasContext {
 public:
  struct Plan;
  struct PlanKey;

  ~BlasContext();
  BlasContext(const BlasContext&) = delete;
  BlasContext& operator=(const BlasContext&) = delete;

  cublasLtHandle_t lt() const { return lt_; }
  // cuBLAS on cudaStreamPerThread, its workspace the shared one.
  cublasHandle_t blas() const { return blas_; }
  int device() const { return device_; }

  // Runs D = C = `cd` (in place when beta != 0) on cudaStreamPerThread with the cached plan for `shape`'s row
  // bucket, building it (one heuristic query) on the bucket's first call. UNIMPLEMENTED when cuBLASLt has no
  // algorithm for the shape (the answer is cached too, so a caller's fallback costs nothing after the first call);
  // INTERNAL for cuBLAS errors.
  Status matmul(const MatmulShape& shape, const void* alpha, const void* a, const void* b, const void* beta, void* cd,
                const void* bias);

  // Builds (or finds) the plan without running it: whether cuBLASLt has an algorithm for `shape`.
  Status prepare(const MatmulShape& shape, const void* bias);

  // Plans held, and plans evicted so far.
  size_t plans_held() const;
  uint64_t plans_evicted() const;

 private:
  friend StatusOr<BlasContext*> blas_context();
  explicit BlasContext(int device);
  // Takes the workspace, then creates what is still missing; OK once everything is there.
  Status set_up();
  // The plan to run `shape` with, its layouts set to shape.n rows and its bias pointer to `bias`.
  StatusOr<Plan*> plan(const MatmulShape& shape, const void* bias);
  StatusOr<Plan*> find_or_build(const PlanKey& key, const void* bias);

  int device_ = 0;
  bool ready_ = false;  // set_up() completed: work may have been queued with the handles and the workspace
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer workspace_;
  std::unique_ptr<LruMap<PlanKey, std::unique_ptr<Plan>, absl::Hash<PlanKey>>> plans_;
};

// The calling thread's context for the current CUDA device, set up on first use: a 32 MiB workspace from the
// caching allocator (OUT_OF_MEMORY past its cap), then the handles (INTERNAL when cuBLAS cannot start). After a
// failure the next call resumes the setup where it stopped.
StatusOr<BlasContext*> blas_context();

}  // namespace brisk::kernels::cuda
