#!/usr/bin/env python3
"""Golden scores for brisk's pair-verifier fit (fit_pair_logistic, lib/runtime/pair_logistic.h), from scikit-learn's
binary LogisticRegression (lbfgs, class_weight="balanced").

    ~/.cache/brisk/pyref/bin/pip install scikit-learn
    ~/.cache/brisk/pyref/bin/python tests/data/make_pair_logistic_golden.py

brisk standardises each feature over the training rows (mean, population standard deviation; a constant feature
keeps scale 1), multiplies the standardised features from `first_embedding` on by embedding_weight, and fits two
classes with fit_intent_head, whose two weight rows come out opposite: the stored weight w = w1 - w0 carries the
penalty (l2 / 4) ||w||^2, so brisk minimises
    J(w, b) = (1/n) sum_i s_i CE(sigmoid(w . z_i + b), y_i) + (l2 / 4) ||w||^2,    s_i = n / (2 n_{y_i}),
which is scikit-learn's  C sum_i s_i CE_i + (1/2) ||w||^2  divided by C n when C = 2 / (l2 n). The score of a point
x is sigmoid(w . z(x) + b), z standardised with the training rows' mean and scale and weighted as above.

Writes pair_logistic_golden.json: {"versions", "n_features", "first_embedding", "train_x" (rows, f32-rounded),
"train_y", "test_x", "fits": [{"l2", "embedding_weight", "C", "train_score", "test_score", "grad_inf_norm"}]}.
The rows: 80 training points (30 labelled 1) and 12 test points of 7 features, seeded: a 0/1 feature, a count, a
ratio, a constant, and three "embedding" features of small scale. grad_inf_norm is the largest gradient entry of J
at scikit-learn's solution, computed here with numpy as a check that the C mapping above holds (it must be ~0).
"""
import json
import os
import platform

import numpy as np
import scipy
import sklearn
from sklearn.linear_model import LogisticRegression

HERE = os.path.dirname(os.path.abspath(__file__))
FIRST_EMBEDDING = 4
FITS = [(0.1, 0.3), (0.01, 1.0), (1.0, 0.0)]  # (l2, embedding_weight)


def rows(rng, labels):
    n = len(labels)
    y = np.asarray(labels, dtype=np.float64)
    binary = (rng.random(n) < 0.25 + 0.5 * y).astype(np.float64)
    count = rng.poisson(1.0 + 2.0 * (1.0 - y)).astype(np.float64)
    ratio = np.clip(0.4 + 0.3 * y + rng.normal(0.0, 0.2, n), 0.0, 1.0)
    constant = np.full(n, 0.5)
    emb = rng.normal(0.0, 0.05, size=(n, 3)) + 0.03 * y[:, None] * np.array([1.0, -1.0, 0.5])
    x = np.column_stack([binary, count, ratio, constant, emb])
    return x.astype(np.float32).astype(np.float64)  # brisk fits f32 features: both fits see the same inputs


def standardise(x, mean, scale, weight):
    z = (x - mean) / scale
    z[:, FIRST_EMBEDDING:] *= weight
    return z


def grad_inf_norm(z, y, w, b, l2):
    n = len(y)
    counts = np.bincount(y, minlength=2)
    s = n / (2.0 * counts[y])
    p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
    r = s * (p - y) / n
    return float(max(np.abs(z.T @ r + 0.5 * l2 * w).max(), abs(r.sum())))


def main():
    rng = np.random.default_rng(20261206)
    train_y = rng.permutation([1] * 30 + [0] * 50)
    train_x = rows(rng, train_y)
    test_x = rows(rng, rng.integers(0, 2, size=12))
    mean = train_x.mean(axis=0)
    std = train_x.std(axis=0)
    scale = np.where(std > 1e-6, std, 1.0)
    n = len(train_y)
    fits = []
    for l2, weight in FITS:
        z = standardise(train_x, mean, scale, weight)
        C = 2.0 / (l2 * n)
        model = LogisticRegression(C=C, solver="lbfgs", class_weight="balanced", tol=1e-12, max_iter=100000)
        model.fit(z, train_y)
        g = grad_inf_norm(z, train_y, model.coef_[0], model.intercept_[0], l2)
        assert g < 1e-6, f"scikit-learn's solution has gradient {g} under brisk's objective (l2 {l2})"
        score = lambda x: model.predict_proba(standardise(x, mean, scale, weight))[:, 1]
        fits.append({"l2": l2, "embedding_weight": weight, "C": C,
                     "train_score": [float(f"{v:.10g}") for v in score(train_x)],
                     "test_score": [float(f"{v:.10g}") for v in score(test_x)],
                     "grad_inf_norm": g})
    golden = {
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                     "scikit-learn": sklearn.__version__},
        "n_features": train_x.shape[1],
        "first_embedding": FIRST_EMBEDDING,
        "train_x": [[float(f"{v:.9g}") for v in row] for row in train_x],
        "train_y": [int(v) for v in train_y],
        "test_x": [[float(f"{v:.9g}") for v in row] for row in test_x],
        "fits": fits,
    }
    with open(os.path.join(HERE, "pair_logistic_golden.json"), "w") as f:
        json.dump(golden, f)
        f.write("\n")


if __name__ == "__main__":
    main()
