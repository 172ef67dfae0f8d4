// The per-thread cuBLAS / cuBLASLt state of the CUDA kernels: handles, the shared workspace and the cache of
// cuBLASLt matmul plans (descriptors, layouts and the heuristic's algorithm per shape). See blas_handles.h.
#include "blas_handles.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/core/allocator.h"

namespace brisk::kernels::cuda {
namespace {

// cuBLAS's recommendation for Hopper (and enough for split-K on Ampere); shared by cuBLAS and cuBLASLt.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// Plans are cached per exact shape, and a packed batch makes the row count vary from batch to batch; past this
// many plans a thread's cache starts over rather than growing without bound (a rebuild is one heuristic query).
constexpr size_t kMaxPlans = 2048;

// Set while static objects are destroyed at process exit: a thread that exits after that point (or the main
// thread, whose thread_local objects die just before) leaks its contexts instead of calling into a CUDA runtime
// that may already be unloading.
std::atomic<bool> g_process_exiting{false};
struct ExitMarker {
  ~ExitMarker() { g_process_exiting.store(true, std::memory_order_relaxed); }
} g_exit_marker;

bool is_main_thread() { return static_cast<pid_t>(::syscall(SYS_gettid)) == ::getpid(); }

struct ThreadContexts {
  std::vector<std::unique_ptr<BlasContext>> by_device;
  ~ThreadContexts() {
    const bool leak = is_main_thread() || g_process_exiting.load(std::memory_order_relaxed);
    for (auto& ctx : by_device) {
      if (leak) {
        (void)ctx.release();  // intentional leak at process exit; see blas_handles.h
      } else {
        ctx.reset();
      }
    }
  }
};
thread_local ThreadContexts t_contexts;

const char* dtype_label(cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return "f32";
    case CUDA_R_16F: return "f16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_8I: return "s8";
    case CUDA_R_32I: return "s32";
    default: return "?";
  }
}

std::string describe(const MatmulShape& s) {
  return absl::StrCat(dtype_label(s.ab_type), " x ", dtype_label(s.ab_type), " -> ", dtype_label(s.cd_type),
                      " matmul m=", s.m, " n=", s.n, " k=", s.k, " (lda ", s.lda, ", ldb ", s.ldb, ", ldc ", s.ldc,
                      ", epilogue ", static_cast<uint32_t>(s.epilogue), ", alignments ", s.align_a, "/", s.align_b, "/",
                      s.align_cd, " bytes)");
}

template <typename V>
cublasStatus_t set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const V& value) {
  return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value));
}

template <typename V>
cublasStatus_t set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const V& value) {
  return cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value));
}

}  // namespace

Status cublas_status(cublasStatus_t status, absl::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, " failed: ", cublasGetStatusName(status), " (", cublasGetStatusString(status), ")"));
}

Status cuda_status(cudaError_t status, absl::string_view what) {
  if (status == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, " failed: ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")"));
}

uint32_t pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a == 0) return 256;
  const uintptr_t low = a & (~a + 1);  // the lowest set bit
  return low >= 256 ? 256u : static_cast<uint32_t>(low);
}

bool epilogue_has_bias(cublasLtEpilogue_t epilogue) {
  return (static_cast<uint32_t>(epilogue) & static_cast<uint32_t>(CUBLASLT_EPILOGUE_BIAS)) != 0;
}

StatusOr<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer b;
  BRISK_ASSIGN_OR_RETURN(b.ptr_, brisk::allocate(Device::kCUDA, bytes));
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr_ != nullptr) brisk::deallocate(Device::kCUDA, ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

struct BlasContext::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr;
  cublasLtMatrixLayout_t b = nullptr;
  cublasLtMatrixLayout_t cd = nullptr;  // C and D share one layout (in-place accumulation needs them equal)
  cublasLtMatmulAlgo_t algo{};
  Status unsupported;  // not OK when the heuristic found no algorithm

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (cd != nullptr) cublasLtMatrixLayoutDestroy(cd);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

StatusOr<std::unique_ptr<BlasContext>> BlasContext::create(int device) {
  std::unique_ptr<BlasContext> ctx(new BlasContext());
  ctx->device_ = device;
  BRISK_RETURN_IF_ERROR(cublas_status(cublasLtCreate(&ctx->lt_), "cublasLtCreate"));
  BRISK_RETURN_IF_ERROR(cublas_status(cublasCreate(&ctx->blas_), "cublasCreate"));
  // cublasSetStream resets a user workspace, so the stream comes first.
  BRISK_RETURN_IF_ERROR(cublas_status(cublasSetStream(ctx->blas_, cudaStreamPerThread), "cublasSetStream"));
  BRISK_ASSIGN_OR_RETURN(ctx->workspace_, DeviceBuffer::allocate(kWorkspaceBytes));
  BRISK_RETURN_IF_ERROR(cublas_status(cublasSetWorkspace(ctx->blas_, ctx->workspace_.get(), ctx->workspace_.size()),
                                      "cublasSetWorkspace"));
  return ctx;
}

BlasContext::~BlasContext() {
  int previous = -1;
  const bool switched =
      cudaGetDevice(&previous) == cudaSuccess && previous != device_ && cudaSetDevice(device_) == cudaSuccess;
  // Work this thread queued may still use the workspace; it must finish before the block can be handed out again.
  // The whole device, not cudaStreamPerThread: at thread exit the runtime may already have retired this thread's
  // stream (thread_local destruction order is unspecified), and a retired stream's work is not waited for.
  cudaDeviceSynchronize();
  cudaGetLastError();  // nothing to report to at thread exit
  plans_.clear();
  if (blas_ != nullptr) cublasDestroy(blas_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  workspace_.reset();
  if (switched) cudaSetDevice(previous);
}

StatusOr<BlasContext::Plan*> BlasContext::plan(const MatmulShape& shape, const void* bias) {
  if (auto it = plans_.find(shape); it != plans_.end()) return it->second.get();
  if (plans_.size() >= kMaxPlans) plans_.clear();

  auto p = std::make_unique<Plan>();
  const std::string what = describe(shape);
  auto check = [&](cublasStatus_t s, const char* call) { return cublas_status(s, absl::StrCat(call, " for ", what)); };
  BRISK_RETURN_IF_ERROR(
      check(cublasLtMatmulDescCreate(&p->desc, shape.compute, shape.scale_type), "cublasLtMatmulDescCreate"));
  const int32_t trans_a = CUBLAS_OP_T;
  const int32_t trans_b = CUBLAS_OP_N;
  const uint32_t epilogue = static_cast<uint32_t>(shape.epilogue);
  BRISK_RETURN_IF_ERROR(check(set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, trans_a), "set TRANSA"));
  BRISK_RETURN_IF_ERROR(check(set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, trans_b), "set TRANSB"));
  BRISK_RETURN_IF_ERROR(check(set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue), "set EPILOGUE"));
  if (epilogue_has_bias(shape.epilogue)) {
    // The heuristic reads the pointer's alignment; matmul() sets each call's own bias.
    BRISK_RETURN_IF_ERROR(check(set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias), "set BIAS_POINTER"));
  }
  BRISK_RETURN_IF_ERROR(check(cublasLtMatrixLayoutCreate(&p->a, shape.ab_type, static_cast<uint64_t>(shape.k),
                                                         static_cast<uint64_t>(shape.m), shape.lda),
                              "cublasLtMatrixLayoutCreate(A)"));
  BRISK_RETURN_IF_ERROR(check(cublasLtMatrixLayoutCreate(&p->b, shape.ab_type, static_cast<uint64_t>(shape.k),
                                                         static_cast<uint64_t>(shape.n), shape.ldb),
                              "cublasLtMatrixLayoutCreate(B)"));
  BRISK_RETURN_IF_ERROR(check(cublasLtMatrixLayoutCreate(&p->cd, shape.cd_type, static_cast<uint64_t>(shape.m),
                                                         static_cast<uint64_t>(shape.n), shape.ldc),
                              "cublasLtMatrixLayoutCreate(C/D)"));

  cublasLtMatmulPreference_t pref = nullptr;
  BRISK_RETURN_IF_ERROR(check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
  const uint64_t max_workspace = workspace_.size();
  cublasStatus_t st = set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace);
  if (st == CUBLAS_STATUS_SUCCESS) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, shape.align_a);
  if (st == CUBLAS_STATUS_SUCCESS) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, shape.align_b);
  if (st == CUBLAS_STATUS_SUCCESS) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, shape.align_cd);
  if (st == CUBLAS_STATUS_SUCCESS) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, shape.align_cd);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(lt_, p->desc, p->a, p->b, p->cd, p->cd, pref, 1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0)) {
    p->unsupported = absl::UnimplementedError(absl::StrCat("cuBLASLt has no algorithm for the ", what));
  } else if (st != CUBLAS_STATUS_SUCCESS) {
    return check(st, "cublasLtMatmulAlgoGetHeuristic");  // not cached: may be transient
  } else {
    p->algo = result.algo;
  }
  Plan* raw = p.get();
  plans_.emplace(shape, std::move(p));
  return raw;
}

Status BlasContext::prepare(const MatmulShape& shape, const void* bias) {
  BRISK_ASSIGN_OR_RETURN(Plan * p, plan(shape, bias));
  return p->unsupported;
}

Status BlasContext::matmul(const MatmulShape& shape, const void* alpha, const void* a, const void* b, const void* beta,
                           void* cd, const void* bias) {
  BRISK_ASSIGN_OR_RETURN(Plan * p, plan(shape, bias));
  BRISK_RETURN_IF_ERROR(p->unsupported);
  if (epilogue_has_bias(shape.epilogue)) {
    BRISK_RETURN_IF_ERROR(cublas_status(set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias),
                                        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
  }
  const cublasStatus_t st = cublasLtMatmul(lt_, p->desc, alpha, a, p->a, b, p->b, beta, cd, p->cd, cd, p->cd, &p->algo,
                                           workspace_.get(), workspace_.size(), cudaStreamPerThread);
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_status(st, absl::StrCat("cublasLtMatmul for the ", describe(shape)));
  return absl::OkStatus();
}

StatusOr<BlasContext*> blas_context() {
  int device = 0;
  BRISK_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
  auto& contexts = t_contexts.by_device;
  if (contexts.size() <= static_cast<size_t>(device)) contexts.resize(static_cast<size_t>(device) + 1);
  std::unique_ptr<BlasContext>& ctx = contexts[static_cast<size_t>(device)];
  if (ctx == nullptr) {
    BRISK_ASSIGN_OR_RETURN(ctx, BlasContext::create(device));
  }
  return ctx.get();
}

}  // namespace brisk::kernels::cuda
