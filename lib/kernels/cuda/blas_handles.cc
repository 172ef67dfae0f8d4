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

// `rows` names the n the plan serves: "n=80" or "n=65..80".
std::string describe(const MatmulShape& s, RowBucket rows) {
  const std::string n = rows.lo == rows.hi ? absl::StrCat(rows.hi) : absl::StrCat(rows.lo, "..", rows.hi);
  return absl::StrCat(dtype_label(s.ab_type), " x ", dtype_label(s.ab_type), " -> ", dtype_label(s.cd_type),
                      " matmul m=", s.m, " n=", n, " k=", s.k, " (lda ", s.lda, ", ldb ", s.ldb, ", ldc ", s.ldc,
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

// A plan serves the row counts of `rows`: one bucket (own_rows false: its algorithm was chosen for rows.hi), or one
// count that failed its bucket's algorithm (own_rows true).
struct BlasContext::PlanKey {
  MatmulShape shape;  // shape.n is rows.hi
  bool own_rows = false;

  friend bool operator==(const PlanKey&, const PlanKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const PlanKey& k) {
    return H::combine(std::move(h), k.shape, k.own_rows);
  }
};

struct BlasContext::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr;
  cublasLtMatrixLayout_t b = nullptr;
  cublasLtMatrixLayout_t cd = nullptr;  // C and D share one layout (in-place accumulation needs them equal)
  cublasLtMatmulAlgo_t algo{};
  Status unsupported;  // not OK when the heuristic found no algorithm
  RowChecks checks;    // the row counts the algorithm was checked for
  int64_t cols = 0;    // the n that layouts b and cd have now

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (cd != nullptr) cublasLtMatrixLayoutDestroy(cd);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }

  // Layouts B and C/D for n = rows (the descriptors are read when a matmul is queued, so one call's count never
  // affects another's).
  Status set_rows(int64_t rows) {
    if (rows == cols) return absl::OkStatus();
    const uint64_t n = static_cast<uint64_t>(rows);
    cublasStatus_t st = cublasLtMatrixLayoutSetAttribute(b, CUBLASLT_MATRIX_LAYOUT_COLS, &n, sizeof(n));
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatrixLayoutSetAttribute(cd, CUBLASLT_MATRIX_LAYOUT_COLS, &n, sizeof(n));
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
      cols = 0;  // unknown: set both again next time
      return cublas_status(st, absl::StrCat("cublasLtMatrixLayoutSetAttribute(COLS = ", rows, ")"));
    }
    cols = rows;
    return absl::OkStatus();
  }
};

BlasContext::BlasContext(int device)
    : device_(device),
      plans_(std::make_unique<LruMap<PlanKey, std::unique_ptr<Plan>, absl::Hash<PlanKey>>>(kMaxPlans)) {}

Status BlasContext::set_up() {
  if (ready_) return absl::OkStatus();
  // The workspace first: under a memory cap it is what fails, and until it is there nothing has been created that a
  // retry would redo or a destructor would have to wait for.
  if (workspace_.get() == nullptr) {
    BRISK_ASSIGN_OR_RETURN(workspace_, DeviceBuffer::allocate(kWorkspaceBytes));
  }
  if (lt_ == nullptr) BRISK_RETURN_IF_ERROR(cublas_status(cublasLtCreate(&lt_), "cublasLtCreate"));
  if (blas_ == nullptr) BRISK_RETURN_IF_ERROR(cublas_status(cublasCreate(&blas_), "cublasCreate"));
  // cublasSetStream resets a user workspace, so the stream comes first.
  BRISK_RETURN_IF_ERROR(cublas_status(cublasSetStream(blas_, cudaStreamPerThread), "cublasSetStream"));
  BRISK_RETURN_IF_ERROR(
      cublas_status(cublasSetWorkspace(blas_, workspace_.get(), workspace_.size()), "cublasSetWorkspace"));
  ready_ = true;
  return absl::OkStatus();
}

BlasContext::~BlasContext() {
  int previous = -1;
  const bool switched =
      cudaGetDevice(&previous) == cudaSuccess && previous != device_ && cudaSetDevice(device_) == cudaSuccess;
  if (ready_) {
    // Work this thread queued may still use the workspace; it must finish before the block can be handed out
    // again. The whole device, not cudaStreamPerThread: at thread exit the runtime may already have retired this
    // thread's stream (thread_local destruction order is unspecified), and a retired stream's work is not waited
    // for. A context whose setup never completed queued nothing, and skips this.
    cudaDeviceSynchronize();
    cudaGetLastError();  // nothing to report to at thread exit
  }
  plans_.reset();
  if (blas_ != nullptr) cublasDestroy(blas_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  workspace_.reset();
  if (switched) cudaSetDevice(previous);
}

size_t BlasContext::plans_held() const { return plans_->size(); }
uint64_t BlasContext::plans_evicted() const { return plans_->evictions(); }

StatusOr<BlasContext::Plan*> BlasContext::find_or_build(const PlanKey& key, const void* bias) {
  if (std::unique_ptr<Plan>* found = plans_->find(key)) return found->get();
  const MatmulShape& shape = key.shape;
  const RowBucket rows = key.own_rows ? RowBucket{shape.n, shape.n} : row_bucket(shape.n);
  auto p = std::make_unique<Plan>();
  const std::string what = describe(shape, rows);
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
    // The heuristic reads the pointer's alignment; plan() sets each call's own bias.
    BRISK_RETURN_IF_ERROR(check(set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias), "set BIAS_POINTER"));
  }
  BRISK_RETURN_IF_ERROR(check(cublasLtMatrixLayoutCreate(&p->a, shape.ab_type, static_cast<uint64_t>(shape.k),
                                                         static_cast<uint64_t>(shape.m), shape.lda),
                              "cublasLtMatrixLayoutCreate(A)"));
  // The heuristic sees the largest count the plan serves.
  BRISK_RETURN_IF_ERROR(check(cublasLtMatrixLayoutCreate(&p->b, shape.ab_type, static_cast<uint64_t>(shape.k),
                                                         static_cast<uint64_t>(shape.n), shape.ldb),
                              "cublasLtMatrixLayoutCreate(B)"));
  BRISK_RETURN_IF_ERROR(check(cublasLtMatrixLayoutCreate(&p->cd, shape.cd_type, static_cast<uint64_t>(shape.m),
                                                         static_cast<uint64_t>(shape.n), shape.ldc),
                              "cublasLtMatrixLayoutCreate(C/D)"));
  p->cols = shape.n;
  p->checks = RowChecks(rows);

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
    p->checks.set(shape.n, RowChecks::Verdict::kFits);  // the count it was chosen for
  }
  return plans_->insert(key, std::move(p)).get();
}

StatusOr<BlasContext::Plan*> BlasContext::plan(const MatmulShape& shape, const void* bias) {
  PlanKey key{shape, false};
  key.shape.n = row_bucket(shape.n).hi;
  BRISK_ASSIGN_OR_RETURN(Plan * p, find_or_build(key, bias));
  // Whether the bucket's algorithm runs this row count: known, or checked now (once per count).
  bool fits = false;
  if (p->unsupported.ok()) {
    BRISK_RETURN_IF_ERROR(p->set_rows(shape.n));
    if (epilogue_has_bias(shape.epilogue)) {
      BRISK_RETURN_IF_ERROR(cublas_status(set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias),
                                          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
    }
    switch (p->checks.get(shape.n)) {
      case RowChecks::Verdict::kFits: fits = true; break;
      case RowChecks::Verdict::kNeedsOwnPlan: break;
      case RowChecks::Verdict::kUnknown: {
        cublasLtMatmulHeuristicResult_t result{};
        const cublasStatus_t st = cublasLtMatmulAlgoCheck(lt_, p->desc, p->a, p->b, p->cd, p->cd, &p->algo, &result);
        fits = st == CUBLAS_STATUS_SUCCESS && result.workspaceSize <= workspace_.size();
        p->checks.set(shape.n, fits ? RowChecks::Verdict::kFits : RowChecks::Verdict::kNeedsOwnPlan);
        break;
      }
    }
  }
  if (fits) return p;
  // The bucket's algorithm does not run this count, or the heuristic found none for the bucket's largest count:
  // a plan chosen for this count alone (unsupported cached there too).
  BRISK_ASSIGN_OR_RETURN(Plan * own, find_or_build(PlanKey{shape, true}, bias));
  if (own->unsupported.ok() && epilogue_has_bias(shape.epilogue)) {
    BRISK_RETURN_IF_ERROR(cublas_status(set_desc(own->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias),
                                        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
  }
  return own;
}

Status BlasContext::prepare(const MatmulShape& shape, const void* bias) {
  BRISK_ASSIGN_OR_RETURN(Plan * p, plan(shape, bias));
  return p->unsupported;
}

Status BlasContext::matmul(const MatmulShape& shape, const void* alpha, const void* a, const void* b, const void* beta,
                           void* cd, const void* bias) {
  BRISK_ASSIGN_OR_RETURN(Plan * p, plan(shape, bias));
  BRISK_RETURN_IF_ERROR(p->unsupported);
  const cublasStatus_t st = cublasLtMatmul(lt_, p->desc, alpha, a, p->a, b, p->b, beta, cd, p->cd, cd, p->cd, &p->algo,
                                           workspace_.get(), workspace_.size(), cudaStreamPerThread);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return cublas_status(st, absl::StrCat("cublasLtMatmul for the ", describe(shape, {shape.n, shape.n})));
  }
  return absl::OkStatus();
}

StatusOr<BlasContext*> blas_context() {
  int device = 0;
  BRISK_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
  auto& contexts = t_contexts.by_device;
  if (contexts.size() <= static_cast<size_t>(device)) contexts.resize(static_cast<size_t>(device) + 1);
  std::unique_ptr<BlasContext>& ctx = contexts[static_cast<size_t>(device)];
  if (ctx == nullptr) ctx.reset(new BlasContext(device));
  // Kept after a failure: the next call resumes (see blas_handles.h, "Setup under a memory cap").
  BRISK_RETURN_IF_ERROR(ctx->set_up());
  return ctx.get();
}

}  // namespace brisk::kernels::cuda
