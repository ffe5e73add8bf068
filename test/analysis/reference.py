"""Computes the reference values test/analysis/reference.test.ts checks the verdict engine
against, with scipy and statsmodels (not with our code). Run once and commit the output:

    pip install scipy==1.17.1 statsmodels==0.15.0
    python3 test/analysis/reference.py > test/analysis/reference-values.json
"""
import json

import numpy as np
import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.multitest import multipletests

DATASETS = {
    # Per-pair p99 differences in ms, shaped like the cases the gate meets.
    "karan_faster": [-0.93, -0.71, -1.21, -0.88, -1.02, -0.95, -0.79, -1.10, -0.84, -0.90],
    "null_noise": [0.12, -0.31, 0.05, 0.44, -0.27, -0.09, 0.18, -0.36, 0.22, -0.02],
    "small_regression": [0.41, 0.18, 0.66, 0.09, 0.52, -0.11, 0.37, 0.29, 0.58, 0.24],
    "with_ties_and_zero": [0.5, -0.5, 0.5, 1.0, 0.0, 1.5, 0.5, -1.0, 2.0, 1.0],
    "heavy_tail": [0.05, -0.02, 0.11, 3.9, 0.07, -0.04, 0.09, 0.02, -0.06, 0.08],
    "n25": [round(float(x), 4) for x in np.random.default_rng(7).normal(0.3, 1.0, 25)],
    "n60": [round(float(x), 4) for x in np.random.default_rng(8).standard_t(3, 60) + 0.2],
}


def describe(d):
    d = np.array(d)
    n = len(d)
    tt = stats.ttest_1samp(d, 0.0)
    ci = stats.t.interval(0.95, n - 1, loc=d.mean(), scale=stats.sem(d))
    ci90 = stats.t.interval(0.90, n - 1, loc=d.mean(), scale=stats.sem(d))
    nz = d[d != 0]
    k = int((nz > 0).sum())
    sign = stats.binomtest(k, len(nz), 0.5)
    ties = len(np.unique(np.abs(nz))) < len(nz)
    method = "approx" if ties or len(nz) > 50 else "exact"
    w = stats.wilcoxon(d, zero_method="wilcox", correction=False, method=method)
    return {
        "d": d.tolist(),
        "mean": float(d.mean()),
        "t": float(tt.statistic),
        "t_p": float(tt.pvalue),
        "ci95": [float(ci[0]), float(ci[1])],
        "ci90": [float(ci90[0]), float(ci90[1])],
        "sign_p": float(sign.pvalue),
        "wilcoxon_statistic": float(w.statistic),
        "wilcoxon_p": float(w.pvalue),
        "wilcoxon_method": method,
    }


out = {
    "generated_with": {"scipy": scipy.__version__, "statsmodels": statsmodels.__version__, "numpy": np.__version__},
    "datasets": {name: describe(d) for name, d in DATASETS.items()},
    "t_quantiles": [
        {"p": p, "df": df, "q": float(stats.t.ppf(p, df))}
        for p in (0.975, 0.95, 0.995, 0.9875, 0.6)
        for df in (1, 2, 4, 9, 19, 29, 99)
    ],
    "t_cdf": [{"t": t, "df": df, "cdf": float(stats.t.cdf(t, df))} for t in (-4.2, -1.0, 0.3, 2.262, 7.5) for df in (3, 9, 30)],
    "normal_cdf": [{"z": z, "cdf": float(stats.norm.cdf(z))} for z in (-6.0, -3.1, -1.96, -0.5, 0.0, 0.7, 2.5, 5.0)],
    "holm": [
        {"p": p, "adjusted": [float(x) for x in multipletests(p, method="holm")[1]]}
        for p in ([0.01, 0.04, 0.03], [0.001, 0.2, 0.049, 0.012], [0.5], [0.02, 0.02])
    ],
    "binomial_upper_tail": [
        {"k": k, "n": n, "p": p, "tail": float(stats.binom.sf(k - 1, n, p))}
        for k, n, p in ((8, 10, 0.5), (30, 40, 0.5), (3, 3, 0.5), (12, 20, 0.3))
    ],
}
print(json.dumps(out, indent=1))
