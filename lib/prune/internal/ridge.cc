// Ridge least squares for reconstruction. See internal/ridge.h.
#include "ridge.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "brisk/core/parallel.h"
#include "brisk/kernels/linear.h"

namespace brisk::prune::internal {

namespace {

// In-place Cholesky factorisation A = L Lᵀ of a symmetric n x n matrix (lower triangle used). Returns the first
// column whose pivot is not clearly positive, or -1: the Gram matrix is summed from f32 products, so pivots within
// ~1e-9 of the largest diagonal entry are rounding noise, not information.
int64_t cholesky(std::vector<double>& a, int64_t n) {
  double max_diag = 0;
  for (int64_t i = 0; i < n; ++i) max_diag = std::max(max_diag, a[static_cast<size_t>(i * n + i)]);
  const double tiny = 1e-9 * std::max(max_diag, 1e-300);
  for (int64_t j = 0; j < n; ++j) {
    double* rj = a.data() + j * n;
    double d = rj[j];
    for (int64_t k = 0; k < j; ++k) d -= rj[k] * rj[k];
    if (!(d > tiny)) return j;
    const double l = std::sqrt(d);
    rj[j] = l;
    parallel_for(j + 1, n, 64, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        double* ri = a.data() + i * n;
        double s = ri[j];
        for (int64_t k = 0; k < j; ++k) s -= ri[k] * rj[k];
        ri[j] = s / l;
      }
    });
  }
  return -1;
}

// Solves L Lᵀ x = b for each of the `cols` right-hand sides stored column-major in b ([cols][n]).
void cholesky_solve(const std::vector<double>& l, int64_t n, std::vector<double>& b, int64_t cols) {
  parallel_for(0, cols, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double* x = b.data() + c * n;
      for (int64_t i = 0; i < n; ++i) {
        const double* li = l.data() + i * n;
        double s = x[i];
        for (int64_t k = 0; k < i; ++k) s -= li[k] * x[k];
        x[i] = s / li[i];
      }
      for (int64_t i = n - 1; i >= 0; --i) {
        double s = x[i];
        for (int64_t k = i + 1; k < n; ++k) s -= l[static_cast<size_t>(k * n + i)] * x[k];
        x[i] = s / l[static_cast<size_t>(i * n + i)];
      }
    }
  });
}

}  // namespace

Status accumulate_products(const float* x, int64_t cols_x, const float* y, int64_t cols_y, int64_t rows,
                           std::vector<double>& xty, std::vector<double>* sum_x) {
  constexpr int64_t kChunk = 256;
  std::vector<float> product(static_cast<size_t>(cols_x * cols_y));
  for (int64_t r0 = 0; r0 < rows; r0 += kChunk) {
    const int64_t r = std::min(kChunk, rows - r0);
    // xᵀ y as a Linear: weight yᵀ [cols_y, r], input xᵀ [cols_x, r].
    BRISK_ASSIGN_OR_RETURN(Tensor xt, Tensor::empty({cols_x, r}, DType::kF32));
    BRISK_ASSIGN_OR_RETURN(Tensor yt, Tensor::empty({cols_y, r}, DType::kF32));
    for (int64_t i = 0; i < r; ++i) {
      const float* xr = x + (r0 + i) * cols_x;
      const float* yr = y + (r0 + i) * cols_y;
      for (int64_t j = 0; j < cols_x; ++j) xt.data<float>()[j * r + i] = xr[j];
      for (int64_t j = 0; j < cols_y; ++j) yt.data<float>()[j * r + i] = yr[j];
      if (sum_x != nullptr) {
        for (int64_t j = 0; j < cols_x; ++j) (*sum_x)[static_cast<size_t>(j)] += xr[j];
      }
    }
    BRISK_ASSIGN_OR_RETURN(kernels::Linear gemm, kernels::Linear::create(yt, Tensor(), Device::kCPU));
    BRISK_RETURN_IF_ERROR(gemm.forward(xt.data<float>(), cols_x, product.data(), kernels::GemmEpilogue::kBias));
    for (size_t i = 0; i < product.size(); ++i) xty[i] += product[i];
  }
  return absl::OkStatus();
}

StatusOr<Refit> solve_ridge(const std::string& name, NormalEquations eq, const float* anchor, double damping,
                            const std::vector<int64_t>& kept_columns) {
  if (!(damping >= 0.0) || !std::isfinite(damping)) {
    return absl::InvalidArgumentError(
        absl::StrCat("reconstruction damping is ", damping, "; expected a finite number >= 0"));
  }
  const int64_t k = eq.k, n = k + 1, out = eq.out;
  double mean_diag = 0;
  for (int64_t i = 0; i < k; ++i) mean_diag += eq.a[static_cast<size_t>(i * n + i)] / static_cast<double>(k);
  const double lambda = damping * mean_diag;
  for (int64_t i = 0; i < k; ++i) eq.a[static_cast<size_t>(i * n + i)] += lambda;
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < k; ++i) eq.rhs[static_cast<size_t>(o * n + i)] += lambda * anchor[o * k + i];
  }
  const int64_t bad = cholesky(eq.a, n);
  if (bad >= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "reconstruction of ", name, ": the least-squares system is singular at ",
        bad < k ? absl::StrCat("kept input column ", kept_columns[static_cast<size_t>(bad)]) : std::string("the bias"),
        " (", k, " kept columns, ", eq.tokens, " calibration tokens, damping ", damping,
        "); expected damping > 0, or more calibration text than kept columns"));
  }
  cholesky_solve(eq.a, n, eq.rhs, out);
  Refit r;
  BRISK_ASSIGN_OR_RETURN(r.weight, Tensor::empty({out, k}, DType::kF32));
  BRISK_ASSIGN_OR_RETURN(r.bias, Tensor::empty({out}, DType::kF32));
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < k; ++i) {
      r.weight.data<float>()[o * k + i] = static_cast<float>(eq.rhs[static_cast<size_t>(o * n + i)]);
    }
    r.bias.data<float>()[o] = static_cast<float>(eq.rhs[static_cast<size_t>(o * n + k)]);
  }
  return r;
}

}  // namespace brisk::prune::internal
