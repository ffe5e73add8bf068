"""Reference values for the estimators the sensitivity benchmark compares, computed with
scipy (not with our code); test/analysis/robust.test.ts checks ours against them. Run once and
commit the output:

    pip install scipy==1.17.1
    python3 test/analysis/reference-robust.py > test/analysis/reference-robust.json
"""
import json

import numpy as np
import scipy
from scipy import stats
from scipy.stats import mstats

DATASETS = {
    "null_noise": [0.12, -0.31, 0.05, 0.44, -0.27, -0.09, 0.18, -0.36, 0.22, -0.02],
    "small_regression": [0.41, 0.18, 0.66, 0.09, 0.52, -0.11, 0.37, 0.29, 0.58, 0.24],
    "heavy_tail": [0.05, -0.02, 0.11, 3.9, 0.07, -0.04, 0.09, 0.02, -0.06, 0.08],
    "n30": [round(float(x), 4) for x in np.random.default_rng(9).standard_t(3, 30) + 0.4],
    # 20% of 23 is 4.6: four trimmed from each end.
    "n23": [round(float(x), 4) for x in np.random.default_rng(5).standard_t(2, 23) - 0.2],
}


def hodges_lehmann(d, confidence):
    """The median of the Walsh averages, and the interval of every shift theta that scipy's exact
    Wilcoxon signed-rank test does not reject at 1 - confidence (searched over the Walsh
    averages, where the test's decision can change)."""
    d = np.array(d)
    walsh = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
    keep = []
    for k in range(len(walsh) - 1):
        theta = (walsh[k] + walsh[k + 1]) / 2  # between two Walsh averages: no zero difference
        if stats.wilcoxon(d - theta, method="exact").pvalue > 1 - confidence:
            keep.append(k)
    return {"estimate": float(np.median(walsh)), "lo": float(walsh[keep[0]]), "hi": float(walsh[keep[-1] + 1])}


# Harrell-Davis on integer samples: an HDR histogram holds integers below 2048 exactly, so the
# test can record these values and read the same estimate from the histogram.
SAMPLES = {
    "uniform_1_200": list(range(1, 201)),
    "tail_1500": [int(x) for x in np.random.default_rng(3).lognormal(6.0, 0.5, 1500).clip(1, 2000)],
}

def trimmed_mean(d, confidence):
    """The 20% trimmed mean and its Tukey-McLaughlin / Yuen interval, by scipy."""
    lo, hi = mstats.trimmed_mean_ci(np.array(d), limits=(0.2, 0.2), alpha=1 - confidence)
    return {"estimate": float(mstats.trimmed_mean(np.array(d), limits=(0.2, 0.2))), "lo": float(lo), "hi": float(hi)}


out = {
    "scipy": scipy.__version__,
    "trimmed_mean": {name: {"d": d, "ci95": trimmed_mean(d, 0.95), "ci99": trimmed_mean(d, 0.99)} for name, d in DATASETS.items()},
    "hodges_lehmann": {name: {"d": d, "ci95": hodges_lehmann(d, 0.95)} for name, d in DATASETS.items()},
    "harrell_davis": {
        name: {"values": v, **{f"q{q}": float(mstats.hdquantiles(np.array(v, dtype=float), prob=[q / 100])[0]) for q in (50, 90, 99)}}
        for name, v in SAMPLES.items()
    },
}
print(json.dumps(out, indent=1))
