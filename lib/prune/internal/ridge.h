// The least-squares machinery of reconstruction (brisk/prune/reconstruct.h): products of activation matrices summed
// in double, and the ridge solve of [X_S, 1] Θ ≈ T pulled towards the kept weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "brisk/core/status.h"
#include "brisk/prune/reconstruct.h"

namespace brisk::prune::internal {

// xty += xᵀ y for x [rows, cols_x] and y [rows, cols_y] (row-major), through the GEMM in chunks of rows; when sum_x is
// given, sum_x += the column sums of x.
Status accumulate_products(const float* x, int64_t cols_x, const float* y, int64_t cols_y, int64_t rows,
                           std::vector<double>& xty, std::vector<double>* sum_x);

// The normal equations of [X_S, 1] Θ ≈ T with k kept columns and `out` targets: a is (k+1) x (k+1) (the last row and
// column are the bias's: Σ x and the token count), rhs is out x (k+1) (row o: [X_S, 1]ᵀ T[:, o]).
struct NormalEquations {
  int64_t k = 0, out = 0, tokens = 0;
  std::vector<double> a, rhs;
};

// Adds λ = damping x mean(diag(a_SS)) to the kept diagonal and λ·anchor to the right-hand sides (anchor [out, k]: the
// kept weights as they were), then solves by Cholesky. A singular system is an error naming `name` and the first
// dependent column by its number in kept_columns.
StatusOr<Refit> solve_ridge(const std::string& name, NormalEquations eq, const float* anchor, double damping,
                            const std::vector<int64_t>& kept_columns);

}  // namespace brisk::prune::internal
