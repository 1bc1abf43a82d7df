#!/usr/bin/env python3
"""Fits the polynomial coefficients of fusex's vectorisable float math
(include/fusex/core/math.hpp) by weighted least squares on Chebyshev nodes,
rounds them to float, and reports the maximum error of the float Horner
evaluation in ulps against mpmath. Re-run after changing a degree or range."""
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

# erf(x) = x * P(x^2), |x| <= 1
P_erf = fit(lambda x: [x ** (2 * k + 1) for k in range(7)], mp.erf, mp.erf, 1e-6, 1.0)
report("erf small x*P(x^2)", P_erf, lambda c, x: np.float32(x) * horner32(c, np.float32(x) * np.float32(x)), mp.erf, 1e-4, 1.0)

# erfc(x) = exp(-x^2 + R(x)), 1 <= x <= 4: R smooth
P_erfc = fit(lambda x: [x ** k for k in range(10)], lambda x: mp.log(mp.erfc(x)) + x * x, lambda x: 1.0, 1.0, 4.0)
print("// erfc R(x) coefficients (error checked in the C++ tests)")
print("  " + ", ".join(f"{float(c):.9e}f" for c in P_erfc))

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

