"""Reference values for a function's change in CPU per request (src/analysis/functions.ts): the
difference of two pooled ratios (samples over requests, per arm) and its delete-one-pair
jackknife standard error, and the Bonferroni Student t interval over m functions, computed
with numpy and scipy without our code; test/analysis/functions.test.ts checks ours against them.
Run once and commit the output:

    pip install scipy==1.17.1
    python3 test/analysis/reference-functions.py > test/analysis/reference-functions.json
"""
import json

import numpy as np
from scipy import stats

rng = np.random.default_rng(28)
cases = []
for pairs, rate, shift in [(10, 40.0, 0.0), (30, 25.0, 0.2), (90, 8.0, 0.05)]:
    req_c = rng.integers(250, 320, pairs)
    req_h = rng.integers(250, 320, pairs)
    host = rng.gamma(20, 1 / 20, pairs)  # a pair's shared speed
    a = rng.poisson(rate * host * req_c / 300)
    b = rng.poisson(rate * (1 + shift) * host * req_h / 300)
    est = b.sum() / req_h.sum() - a.sum() / req_c.sum()
    loo = np.array([(b.sum() - b[i]) / (req_h.sum() - req_h[i]) - (a.sum() - a[i]) / (req_c.sum() - req_c[i]) for i in range(pairs)])
    se = float(np.sqrt((pairs - 1) / pairs * ((loo - loo.mean()) ** 2).sum()))
    m, confidence = 40, 0.975
    level = 1 - (1 - confidence) / m
    q = float(stats.t.ppf(1 - (1 - level) / 2, pairs - 1))
    cases.append({
        "champion": a.tolist(), "champion_requests": req_c.tolist(), "challenger": b.tolist(), "challenger_requests": req_h.tolist(),
        "estimate": float(est), "se": se, "functions": m, "confidence": confidence, "half_width": q * se,
    })
print(json.dumps({"scipy": __import__("scipy").__version__, "numpy": np.__version__, "cases": cases}))
