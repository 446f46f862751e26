#!/usr/bin/python3
"""Golden values for rtlab-evt from SciPy: maximum-likelihood GEV and GPD fits of samples drawn
from known distributions, refined with Nelder-Mead so that SciPy's optimiser stopping early is
not mistaken for a difference, with log densities and return levels at the fitted parameters.

Shape convention of the output: xi (xi > 0 heavy tail); SciPy's genextreme has c = -xi,
genpareto has c = xi.

    make.py --out cases.json              the committed fixture (fixed seeds)
    make.py --fresh --seed N --out F      new samples, for CI's comparison (.ci/evt-scipy)
"""
import argparse
import json

import numpy as np
from scipy import optimize, stats

CASES = [
    ("gev", -0.25, 100.0, 8.0, 200),
    ("gev", -0.05, 30.0, 2.0, 500),
    ("gev", 0.0, 50.0, 5.0, 300),
    ("gev", 0.2, 20.0, 1.5, 400),
    ("gev", 0.45, 12.0, 3.0, 150),
    ("gpd", -0.3, None, 5.0, 200),
    ("gpd", 0.0, None, 1.0, 400),
    ("gpd", 0.15, None, 12.0, 300),
    ("gpd", 0.5, None, 2.0, 150),
]


def gev_nll(p, x):
    mu, sigma, xi = p
    if sigma <= 0 or xi <= -1:
        return np.inf
    v = -stats.genextreme.logpdf(x, -xi, loc=mu, scale=sigma).sum()
    return v if np.isfinite(v) else np.inf


def gpd_nll(p, x):
    sigma, xi = p
    if sigma <= 0 or xi <= -1:
        return np.inf
    v = -stats.genpareto.logpdf(x, xi, loc=0, scale=sigma).sum()
    return v if np.isfinite(v) else np.inf


def refine(f, starts, x):
    """The best Nelder-Mead minimum from several starts (SciPy's own fit first): its fit can
    land where some data lie outside the support."""
    best = None
    for p0 in starts:
        if not np.isfinite(f(p0, x)):
            continue
        r = optimize.minimize(f, p0, args=(x,), method="Nelder-Mead",
                              options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 6000, "maxfev": 8000})
        for p, v in ((r.x, r.fun), (np.asarray(p0, dtype=float), f(p0, x))):
            if np.isfinite(v) and (best is None or v < best[1]):
                best = (p, v)
    if best is None:
        raise SystemExit("no start gave a finite likelihood")
    return best


def case(kind, xi, mu, sigma, n, rng):
    if kind == "gev":
        x = stats.genextreme.rvs(-xi, loc=mu, scale=sigma, size=n, random_state=rng)
        c, loc, scale = stats.genextreme.fit(x)
        s0 = np.sqrt(6) * x.std() / np.pi
        (m, s, k), nll = refine(gev_nll, [[loc, scale, -c], [x.mean() - 0.5772 * s0, s0, 0.1],
                                          [x.mean() - 0.5772 * s0, s0, -0.2]], x)
        probe = np.quantile(x, [0.1, 0.5, 0.9])
        return {
            "kind": kind, "truth": {"xi": xi, "mu": mu, "sigma": sigma}, "data": x.tolist(),
            "fit": {"xi": float(k), "mu": float(m), "sigma": float(s), "nll": float(nll)},
            "probe": probe.tolist(),
            "ln_pdf": stats.genextreme.logpdf(probe, -k, loc=m, scale=s).tolist(),
            "cdf": stats.genextreme.cdf(probe, -k, loc=m, scale=s).tolist(),
            "levels": {str(q): float(stats.genextreme.isf(q, -k, loc=m, scale=s)) for q in (1e-2, 1e-4, 1e-6)},
        }
    x = stats.genpareto.rvs(xi, loc=0, scale=sigma, size=n, random_state=rng)
    c, _, scale = stats.genpareto.fit(x, floc=0)
    (s, k), nll = refine(gpd_nll, [[scale, c], [x.mean(), 0.0], [x.mean(), -0.3]], x)
    probe = np.quantile(x, [0.1, 0.5, 0.9])
    return {
        "kind": kind, "truth": {"xi": xi, "sigma": sigma}, "data": x.tolist(),
        "fit": {"xi": float(k), "sigma": float(s), "nll": float(nll)},
        "probe": probe.tolist(),
        "ln_pdf": stats.genpareto.logpdf(probe, k, loc=0, scale=s).tolist(),
        "cdf": stats.genpareto.cdf(probe, k, loc=0, scale=s).tolist(),
        "levels": {str(q): float(stats.genpareto.isf(q, k, loc=0, scale=s)) for q in (1e-2, 1e-4, 1e-6)},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--fresh", action="store_true", help="random shapes and sizes too")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    cases = CASES
    if a.fresh:
        cases = [(k, float(rng.uniform(-0.4, 0.5)), float(rng.uniform(10, 200)) if k == "gev" else None,
                  float(rng.uniform(0.5, 20)), int(rng.integers(150, 600))) for k in ["gev", "gpd"] * 4]
    out = {"scipy": __import__("scipy").__version__, "seed": a.seed,
           "cases": [case(*c, rng) for c in cases]}
    with open(a.out, "w") as f:
        json.dump(out, f, allow_nan=False)


if __name__ == "__main__":
    main()
