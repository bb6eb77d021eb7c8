#!/usr/bin/python3
"""Trusted evaluator: second autocorrelation inequality (C2, maximise).

Reads only the solution file named on the command line and prints one JSON
line: {"valid", "objective", "metrics", "reason"} ("unreadable": true when
the file is not JSON at all).

The solution {"heights": [h_0, ..., h_{n-1}]} is a step function on n equal
steps. With c = h * h (full autoconvolution, m = 2n - 1 values):
  L2^2 = integral of the piecewise-linear function through m + 2 equally
         spaced points on [-1/2, 1/2] with values 0, c_0, ..., c_{m-1}, 0
         (each segment of width w contributes w/3 (y1^2 + y1 y2 + y2^2)),
  L1   = sum |c| / (m + 1),   Linf = max |c|,
  objective = L2^2 / (L1 Linf).
Computed on max(h, 0): the -1e-10 tolerance is for rounding only and never
changes a score. Valid when every height is finite, h >= -1e-10,
|h| <= 1e10 and max(h, 0) is not all zero.
"""
import json
import sys

import numpy as np

MIN_HEIGHT = -1e-10
MAX_ABS_HEIGHT = 1e10
# Direct convolution is exact to rounding and fast up to here; beyond, FFT
# convolution (agrees to ~1e-15 relative on the published 50,000-step
# solution and takes milliseconds instead of seconds).
DIRECT_CONVOLUTION_MAX_N = 20000


class Invalid(Exception):
    pass


def emit(valid, objective=None, metrics=None, reason="", unreadable=False):
    out = {"valid": valid, "objective": objective, "metrics": metrics or {}, "reason": reason}
    if unreadable:
        out["unreadable"] = True
    print(json.dumps(out, allow_nan=False))
    sys.exit(0)


def heights_of(data):
    if not isinstance(data, dict) or not isinstance(data.get("heights"), list):
        raise Invalid('the solution must be an object {"heights": [numbers]}')
    values = data["heights"]
    if len(values) == 0:
        raise Invalid('"heights" is empty')
    for i, x in enumerate(values):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise Invalid(f"heights[{i}] is not a number")
    try:
        h = np.array(values, dtype=np.float64)
    except OverflowError:
        raise Invalid("a height is too large for a double")
    if not np.all(np.isfinite(h)):
        raise Invalid("heights hold NaN or infinite values")
    return h


def autoconvolution(h):
    if len(h) <= DIRECT_CONVOLUTION_MAX_N:
        return np.convolve(h, h, mode="full")
    from scipy.signal import fftconvolve

    return fftconvolve(h, h, mode="full")


def c2_ratio(h):
    c = autoconvolution(h)
    m = len(c)
    y = np.concatenate(([0.0], c, [0.0]))
    y1, y2 = y[:-1], y[1:]
    width = 1.0 / (m + 1)
    l2_squared = float(np.sum((width / 3.0) * (y1 * y1 + y1 * y2 + y2 * y2)))
    l1 = float(np.sum(np.abs(c))) / (m + 1)
    linf = float(np.max(np.abs(c)))
    if not (l1 > 0 and linf > 0):
        raise Invalid("the autoconvolution is zero everywhere")
    return l2_squared / (l1 * linf), l2_squared, l1, linf


def main(argv):
    if len(argv) < 2:
        print("usage: evaluate.py SOLUTION_FILE", file=sys.stderr)
        sys.exit(2)
    try:
        with open(argv[1], "rb") as f:
            data = json.loads(f.read().decode("utf-8"))
    except Exception as e:  # any failure to read or parse means no solution
        emit(False, reason=f"the solution file is not readable JSON: {e}", unreadable=True)
    try:
        h = heights_of(data)
        if np.any(h < MIN_HEIGHT):
            i = int(np.argmax(h < MIN_HEIGHT))
            raise Invalid(f"heights must be non-negative: heights[{i}] = {h[i]!r}")
        if np.any(np.abs(h) > MAX_ABS_HEIGHT):
            raise Invalid(f"heights must be at most {MAX_ABS_HEIGHT:g} in absolute value")
        objective, l2_squared, l1, linf = c2_ratio(np.maximum(h, 0.0))
        if not np.isfinite(objective) or objective <= 0:
            raise Invalid(f"the objective is {objective!r}, not a positive number")
    except Invalid as e:
        emit(False, reason=str(e))
    emit(True, objective, {"n": len(h), "c2_bound": objective, "l2_squared": l2_squared, "l1": l1, "linf": linf})


if __name__ == "__main__":
    main(sys.argv)
