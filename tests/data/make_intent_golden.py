#!/usr/bin/env python3
"""Golden probabilities for brisk's few-shot intent heads (fit_intent_head), from scikit-learn's multinomial
LogisticRegression (lbfgs, class_weight="balanced").

    ~/.cache/brisk/pyref/bin/pip install scikit-learn
    ~/.cache/brisk/pyref/bin/python tests/data/make_intent_golden.py

brisk minimises  J(W, b) = (1/n) sum_i s_i CE(softmax(W x_i + b), y_i) + (l2/2) ||W||_F^2  with the balanced weights
s_i = n / (k n_{y_i}) (sum_i s_i = n); scikit-learn minimises  C sum_i s_i CE_i + (1/2) ||W||_F^2  (the intercept
is not penalised), which is (C n) J: the same minimiser when C = 1 / (l2 n). The softmax is invariant to a shift of
every bias by one constant, so the test compares probabilities, not parameters.

Writes intent_golden.json: {"versions", "dim", "train_x" (rows of dim floats), "train_y", "test_x", "fits": [{"l2",
"C", "train_proba", "test_proba", "n_iter", "grad_inf_norm"}]}. The points are L2-normalised rows like sentence
embeddings (rounded to f32): 40 in 16 dimensions over 4 unbalanced classes (16, 12, 8, 4), and 10 test points,
all seeded.
grad_inf_norm is the largest gradient entry of J at scikit-learn's solution, computed here with numpy as a check
that the C mapping above holds (it must be ~0).
"""
import json
import os
import platform

import numpy as np
import scipy
import sklearn
from sklearn.linear_model import LogisticRegression

HERE = os.path.dirname(os.path.abspath(__file__))
DIM = 16
COUNTS = [16, 12, 8, 4]
L2S = [1e-2, 1e-3]


def normalise(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def grad_inf_norm(x, y, coef, intercept, l2):
    """max |dJ/dtheta| of brisk's objective at (coef, intercept)."""
    n, k = x.shape[0], coef.shape[0]
    counts = np.bincount(y, minlength=k)
    s = n / (k * counts[y])
    z = x @ coef.T + intercept
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    r = p.copy()
    r[np.arange(n), y] -= 1.0
    r *= s[:, None] / n
    gw = r.T @ x + l2 * coef
    gb = r.sum(axis=0)
    return float(max(np.abs(gw).max(), np.abs(gb).max()))


def main():
    rng = np.random.default_rng(20240611)
    means = rng.normal(0.0, 1.0, size=(len(COUNTS), DIM))
    xs, ys = [], []
    for c, count in enumerate(COUNTS):
        xs.append(means[c] + rng.normal(0.0, 1.2, size=(count, DIM)))
        ys += [c] * count
    train_x = normalise(np.concatenate(xs))
    train_y = np.array(ys)
    perm = rng.permutation(len(train_y))  # interleave the classes
    train_x, train_y = train_x[perm], train_y[perm]
    test_x = normalise(rng.normal(0.0, 1.0, size=(10, DIM)) + means[rng.integers(0, len(COUNTS), size=10)])
    # brisk fits f32 embeddings: round the points to f32 first, so that both fits see exactly the same inputs.
    train_x = train_x.astype(np.float32).astype(np.float64)
    test_x = test_x.astype(np.float32).astype(np.float64)

    fits = []
    n = len(train_y)
    for l2 in L2S:
        C = 1.0 / (l2 * n)
        model = LogisticRegression(C=C, solver="lbfgs", class_weight="balanced", tol=1e-12, max_iter=100000)
        model.fit(train_x, train_y)
        g = grad_inf_norm(train_x, train_y, model.coef_, model.intercept_, l2)
        assert g < 1e-6, f"scikit-learn's solution has gradient {g} under brisk's objective (l2 {l2})"
        fits.append({"l2": l2, "C": C,
                     "train_proba": [[float(f"{v:.10g}") for v in row] for row in model.predict_proba(train_x)],
                     "test_proba": [[float(f"{v:.10g}") for v in row] for row in model.predict_proba(test_x)],
                     "n_iter": int(model.n_iter_[0]), "grad_inf_norm": g})

    golden = {
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                     "scikit-learn": sklearn.__version__},
        "dim": DIM,
        "train_x": [[float(f"{v:.9g}") for v in row] for row in train_x],
        "train_y": [int(v) for v in train_y],
        "test_x": [[float(f"{v:.9g}") for v in row] for row in test_x],
        "fits": fits,
    }
    with open(os.path.join(HERE, "intent_golden.json"), "w") as f:
        json.dump(golden, f)
        f.write("\n")


if __name__ == "__main__":
    main()
