"""Reference values for the pooled percentile and its jackknife over pairs (numpy), and for the
group-sequential levels of repeated looks (scipy's multivariate normal), computed without our
code; test/analysis/pooled.test.ts checks ours against them. Run once and commit the output:

    pip install scipy==1.17.1
    python3 test/analysis/reference-pooled.py > test/analysis/reference-pooled.json
"""
import json

import numpy as np
import scipy
from scipy import optimize, stats

rng = np.random.default_rng(33)


def pairs_of(count, n, shift):
    """Pairs of slices that share a host factor: each slice n latencies in µs, 0.1 µs steps."""
    out = []
    for _ in range(count):
        host = np.exp(0.1 * rng.standard_t(3))
        a = np.round(rng.lognormal(6, 0.5, n) * host, 1)
        b = np.round(rng.lognormal(6, 0.5, n) * host * (1 + shift), 1)
        out.append((a.tolist(), b.tolist()))
    return out


def pooled(pairs, q):
    a = np.concatenate([p[0] for p in pairs])
    b = np.concatenate([p[1] for p in pairs])
    return float(np.percentile(b, 100 * q) - np.percentile(a, 100 * q))


def jackknife(pairs, q):
    n = len(pairs)
    loo = np.array([pooled(pairs[:i] + pairs[i + 1:], q) for i in range(n)])
    return {"leave_one_out": loo.tolist(), "se": float(np.sqrt((n - 1) / n * ((loo - loo.mean()) ** 2).sum()))}


def nominal_alphas(alpha, ns, ratio=0.5):
    """Two-sided nominal levels c_k -> 2(1 - Phi(c_k)) such that the first rejection at look k
    has probability alpha(1 - ratio^k) - alpha(1 - ratio^(k-1)), Z_k the standardized sum over
    the first ns[k] pairs (corr(Z_i, Z_j) = sqrt(n_i / n_j), i < j)."""
    cs = []
    out = []
    opts = {"maxpts": 2_000_000, "abseps": 1e-10, "releps": 1e-10}

    def inside(limits, k):
        cov = np.array([[min(ns[i], ns[j]) / np.sqrt(ns[i] * ns[j]) for j in range(k)] for i in range(k)])
        if k == 1:
            return 2 * stats.norm.cdf(limits[0]) - 1
        lim = np.array(limits)
        return stats.multivariate_normal.cdf(lim, mean=np.zeros(k), cov=cov, lower_limit=-lim, **opts)

    for k in range(len(ns)):
        spend = alpha * (1 - ratio ** (k + 1)) - alpha * (1 - ratio ** k)
        before = 1.0 if k == 0 else inside(cs, k)
        c = optimize.brentq(lambda c: before - inside(cs + [c], k + 1) - spend, 0.5, 10, xtol=1e-10)
        cs.append(c)
        out.append(float(2 * (1 - stats.norm.cdf(c))))
    return out


DATASETS = {"six_pairs": pairs_of(6, 40, 0.0), "twenty_five_pairs": pairs_of(25, 60, 0.05)}

out = {
    "scipy": scipy.__version__,
    "numpy": np.__version__,
    "pooled": {
        name: {"pairs": pairs, **{f"q{q}": {"estimate": pooled(pairs, q / 100), **jackknife(pairs, q / 100)} for q in (50, 90, 99)}}
        for name, pairs in DATASETS.items()
    },
    "sequential": [{"alpha": 0.05, "pairs": ns, "nominal": nominal_alphas(0.05, ns)} for ns in ([90], [90, 180], [90, 180, 270], [60, 150, 200])],
}
print(json.dumps(out))
