#!/usr/bin/env python3
"""Fits the polynomial coefficients of fusex's vectorisable float math
(include/fusex/core/math.hpp) by weighted least squares on Chebyshev nodes,
rounds them to float, and reports the maximum error of the float Horner
evaluation in ulps against mpmath. Re-run after changing a degree or range."""
import math

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def cheb_nodes(a, b, n):
    k = np.arange(n)
    return 0.5 * (a + b) + 0.5 * (b - a) * np.cos((2 * k + 1) * np.pi / (2 * n))


def fit(basis_fn, target_fn, weight_fn, a, b, n=4000):
    xs = cheb_nodes(a, b, n)
    A = np.array([basis_fn(float(x)) for x in xs])
    y = np.array([float(target_fn(mp.mpf(float(x)))) for x in xs])
    w = np.array([1.0 / float(weight_fn(mp.mpf(float(x)))) for x in xs])
    c, *_ = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)
    return [np.float32(v) for v in c]


def horner32(coefs, t):
    r = np.float32(0)
    for c in reversed(coefs):
        r = np.float32(r * np.float32(t) + c)
    return r


def ulp_err(got, exact):
    exact = float(exact)
    if exact == 0:
        return 0.0
    return abs(float(got) - exact) / float(np.spacing(np.float32(abs(exact))))


def report(name, coefs, evalf, exact, a, b):
    xs = np.linspace(a, b, 20001).astype(np.float32)
    worst = max(ulp_err(evalf(coefs, x), exact(mp.mpf(float(x)))) for x in xs)
    print(f"// {name}: max {worst:.2f} ulp on [{a}, {b}]")
    print("  " + ", ".join(f"{float(c):.9e}f" for c in coefs))


# exp(r) = 1 + r + r^2 * P(r), |r| <= ln2/2
P_exp = fit(lambda r: [r ** (k + 2) for k in range(6)], lambda r: mp.exp(r) - 1 - r, lambda r: mp.exp(r), -0.3466, 0.3466)
report("exp P(r)", P_exp, lambda c, r: np.float32(1) + np.float32(r) + np.float32(r) * np.float32(r) * horner32(c, r),
       mp.exp, -0.3466, 0.3466)

# log(m) = 2s + s^3 * P(s^2), s = (m-1)/(m+1), m in [sqrt(1/2), sqrt(2)]
smax = float((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1))
P_log = fit(lambda s: [s ** (2 * k + 3) for k in range(4)], lambda s: 2 * mp.atanh(s) - 2 * s, lambda s: abs(2 * mp.atanh(s)) + 1e-30, 1e-6, smax)
def log_eval(c, s):
    s = np.float32(s); s2 = np.float32(s * s)
    return np.float32(np.float32(2) * s + s * s2 * horner32(c, s2))
report("log P(s^2)", P_log, log_eval, lambda s: 2 * mp.atanh(s), 1e-4, smax)

# erf(x) = x * P(x^2) / Q(x^2), x^2 clamped to 3.92^2 (beyond, erf rounds to
# +-1 in float, and the result is clamped to [-1, 1]): one rational on the
# whole range, so a vector of lanes computes one expression and no exp;
# fitted for relative error by iterated linearised least squares (P - f Q = 0
# weighted by 1 / (f Q), Q(0) = 1). Degrees 6 and 4: 5.2 ulp on this
# sample, 6.6 over the tests' (6 and 5: 4.6 here, 3 give 14).
def fit_rational_erf(dp, dq, X=3.92, iters=12):
    xs = np.unique(np.concatenate([0.5 * X * (1 - np.cos(np.linspace(0, np.pi, 3000))), np.linspace(0, X, 3000)]))
    xs = xs[xs > 1e-4]
    f = np.array([float(mp.erf(x)) / x for x in xs])
    s = xs * xs
    w = np.ones_like(s)
    for _ in range(iters):
        A = np.concatenate([np.stack([s ** k for k in range(dp + 1)], 1),
                            -np.stack([f * s ** k for k in range(1, dq + 1)], 1)], 1)
        W = w / np.abs(f)
        c, *_ = np.linalg.lstsq(A * W[:, None], f * W, rcond=None)
        q = np.concatenate([[1], c[dp + 1:]])
        w = 1 / np.abs(sum(q[k] * s ** k for k in range(dq + 1)))
    return [np.float32(v) for v in c[:dp + 1]], [np.float32(v) for v in q]


def fma_horner32(coefs, t):  # the C++ Horner with contraction: one rounding per step
    r = np.float32(0)
    for c in reversed(coefs):
        r = np.float32(float(r) * float(t) + float(c))
    return r


P_erf, Q_erf = fit_rational_erf(6, 4)
def erf_eval(c, x):
    x = np.float32(x)
    s = np.float32(min(np.float32(x * x), np.float32(3.92 * 3.92)))
    r = np.float32(x * np.float32(fma_horner32(c[0], s) / fma_horner32(c[1], s)))
    return np.float32(max(min(r, 1), -1))
xs = np.concatenate([np.linspace(0, 5, 100001), np.logspace(-30, 0.7, 10000)]).astype(np.float32)
worst = max(ulp_err(erf_eval((P_erf, Q_erf), x), mp.erf(mp.mpf(float(x)))) for x in xs)
print(f"// erf x*P(x^2)/Q(x^2): max {worst:.2f} ulp on [0, 5]")
print("  P: " + ", ".join(f"{float(c):.9e}f" for c in P_erf))
print("  Q: " + ", ".join(f"{float(c):.9e}f" for c in Q_erf[1:]))

# tanh(x) = x * P(x^2), |x| <= 0.625
P_tanh = fit(lambda x: [x ** (2 * k + 1) for k in range(6)], mp.tanh, mp.tanh, 1e-6, 0.625)
report("tanh small x*P(x^2)", P_tanh, lambda c, x: np.float32(x) * horner32(c, np.float32(x) * np.float32(x)), mp.tanh, 1e-4, 0.625)

# sin(r) = r + r^3 P(r^2), cos(r) = 1 - r^2/2 + r^4 Q(r^2), |r| <= pi/4
q = float(mp.pi / 4)
P_sin = fit(lambda r: [r ** (2 * k + 3) for k in range(4)], lambda r: mp.sin(r) - r, lambda r: abs(mp.sin(r)) + 1e-30, 1e-6, q)
def sin_eval(c, r):
    r = np.float32(r); r2 = np.float32(r * r)
    return np.float32(r + r * r2 * horner32(c, r2))
report("sin P(r^2)", P_sin, sin_eval, mp.sin, 1e-4, q)
P_cos = fit(lambda r: [r ** (2 * k + 4) for k in range(4)], lambda r: mp.cos(r) - 1 + r * r / 2, lambda r: mp.cos(r), 1e-6, q)
def cos_eval(c, r):
    r = np.float32(r); r2 = np.float32(r * r)
    return np.float32(np.float32(1) - np.float32(0.5) * r2 + r2 * r2 * horner32(c, r2))
report("cos Q(r^2)", P_cos, cos_eval, mp.cos, 1e-4, q)


# erf on AVX-512 (and the scalar form beside it): |x| clamped to 3.92, split
# into 32 intervals of width 1/8 centred on k/8 (k = round(8|x|), t = |x| -
# k/8 in [-1/16, 1/16]), a degree-4 polynomial in t per interval, its five
# coefficients looked up by one two-register permute each. Interval 0 has
# c0 = 0 and is fitted for relative error down to the subnormals; each one
# by Lawson's iteration towards the minimax relative error. 2.1 ulp on this
# sample (degree 3: 15 ulp).
ERF_BOUND, ERF_N, ERF_DEG = np.float32(3.92), 32, 4
def fit_erf_interval(k):
    c = k / 8
    lo, hi = max(0.0, c - 1 / 16), min(c + 1 / 16, float(ERF_BOUND))
    ts = np.unique(np.concatenate([0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.linspace(0, np.pi, 400)),
                                   np.linspace(lo, hi, 400)])) - c
    if k == 0:
        ts = ts[ts > 1e-6]
    f = np.array([float(mp.erf(c + t)) for t in ts])
    powers = range(1, ERF_DEG + 1) if k == 0 else range(ERF_DEG + 1)
    A = np.stack([ts ** p for p in powers], 1)
    w = np.ones_like(ts)
    for _ in range(30):
        W = np.sqrt(w) / np.abs(f)
        co, *_ = np.linalg.lstsq(A * W[:, None], f * W, rcond=None)
        w = w * np.abs(A @ co - f) / np.abs(f)
        w /= w.sum()
    return [np.float32(v) for v in ([0.0] if k == 0 else []) + list(co)]


erf_tab = np.array([fit_erf_interval(k) for k in range(ERF_N)], dtype=np.float32)
# The last interval's c0 raised from 1 - 2^-24 to 1: the clamp (and +-inf)
# then give erf's rounded value, 1, and no value exceeds 1 (1.2 ulp there).
erf_tab[ERF_N - 1, 0] = 1.0
def erf_table_eval(x):  # float32 lanes, one rounding per Horner step (the C++ contracts to FMA)
    a = np.minimum(np.abs(x), ERF_BOUND)
    k = np.rint(a.astype(np.float64) * 8)
    t = (a.astype(np.float64) - k / 8).astype(np.float32)  # exact
    k = k.astype(np.int64)
    r = erf_tab[k, ERF_DEG]
    for j in range(ERF_DEG - 1, -1, -1):
        r = (r.astype(np.float64) * t + erf_tab[k, j]).astype(np.float32)
    return np.copysign(r, x)
xs = np.concatenate([np.linspace(0, 5, 2000001), 10 ** np.linspace(-38, 0.7, 300000)]).astype(np.float32)
exact = np.array([float(mp.erf(float(v))) if v < 1e-3 else math.erf(float(v)) for v in xs])
worst = np.max(np.abs(erf_table_eval(xs) - exact) / np.spacing(np.abs(exact).astype(np.float32)))
print(f"// erf by table: max {worst:.2f} ulp on [0, 5]; largest value {erf_table_eval(np.float32([5]))[0]!r}")
for j in range(ERF_DEG + 1):
    vals = [f"{float(v):.9e}f" for v in erf_tab[:, j]]
    print("  {" + ",\n   ".join(", ".join(vals[i:i + 4]) for i in range(0, ERF_N, 4)) + "},")


# d gelu / dx = Phi(x) + x phi(x) on AVX-512, the same scheme as erf: odd
# part o(a) = dgelu(a) - 1/2 = erf(a / sqrt 2) / 2 + a phi(a) for a = |x|
# clamped to 7.8, 32 intervals of width 1/4 centred on k/4 (t = a - k/4 in
# [-1/8, 1/8]), a degree-5 polynomial per interval; then dgelu(x) = 1/2 +
# sign(x) o(|x|). Interval 0 has c0 = 0 (o is odd); the last one is the
# constant 1/2, so +-inf give 1 and 0. Degree 4: 3 ulp, and 2.7 x 2^-24 below 1/2.
DG_BOUND, DG_N, DG_DEG = np.float32(7.8), 32, 5
def dgelu_half(a):
    return 0.5 * math.erf(a / math.sqrt(2)) + a * math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
def fit_dgelu_interval(k):
    c = k / 4
    lo, hi = max(0.0, c - 1 / 8), min(c + 1 / 8, float(DG_BOUND))
    ts = np.unique(np.concatenate([0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.linspace(0, np.pi, 400)),
                                   np.linspace(lo, hi, 400)])) - c
    if k == 0:
        ts = ts[ts > 1e-6]
    f = np.array([dgelu_half(c + t) for t in ts])
    powers = range(1, DG_DEG + 1) if k == 0 else range(DG_DEG + 1)
    A = np.stack([ts ** p for p in powers], 1)
    w = np.ones_like(ts)
    for _ in range(30):
        W = np.sqrt(w) / np.abs(f)
        co, *_ = np.linalg.lstsq(A * W[:, None], f * W, rcond=None)
        w = w * np.maximum(np.abs(A @ co - f) / np.abs(f), 1e-30)
        w /= w.sum()
    return [np.float32(v) for v in ([0.0] if k == 0 else []) + list(co)]


dg_tab = np.array([fit_dgelu_interval(k) for k in range(DG_N)], dtype=np.float32)
dg_tab[DG_N - 1] = 0
dg_tab[DG_N - 1, 0] = 0.5
def dgelu_table_eval(x):
    a = np.minimum(np.abs(x), DG_BOUND)
    k = np.rint(a.astype(np.float64) * 4)
    t = (a.astype(np.float64) - k / 4).astype(np.float32)
    k = k.astype(np.int64)
    r = dg_tab[k, DG_DEG]
    for j in range(DG_DEG - 1, -1, -1):
        r = (r.astype(np.float64) * t + dg_tab[k, j]).astype(np.float32)
    return (np.float32(0.5) + np.copysign(r, x)).astype(np.float32)
xs = np.concatenate([np.linspace(-10, 10, 2000001), 10 ** np.linspace(-38, 0.7, 100000)]).astype(np.float32)
exact = np.array([0.5 + np.sign(v) * dgelu_half(abs(float(v))) for v in xs])
err = np.abs(dgelu_table_eval(xs) - exact) / np.maximum(np.spacing(np.abs(exact).astype(np.float32)), 2.0 ** -24)
print(f"// dgelu by table: max {np.max(err):.2f} ulp, or x 2^-24 below 1/2, on [-10, 10]")
for j in range(DG_DEG + 1):
    vals = [f"{float(v):.9e}f" for v in dg_tab[:, j]]
    print("  {" + ",\n   ".join(", ".join(vals[i:i + 4]) for i in range(0, DG_N, 4)) + "},")
