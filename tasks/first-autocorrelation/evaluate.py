#!/usr/bin/python3
"""Trusted evaluator: first autocorrelation inequality (C1, minimise).

Reads only the solution file named on the command line and prints one JSON
line: {"valid", "objective", "metrics", "reason"} ("unreadable": true when
the file is not JSON at all).

The solution {"heights": [h_0, ..., h_{n-1}]} is a step function on n equal
steps. Objective: 2 n max(h * h) / (sum h)^2 with the full discrete
autoconvolution h * h, computed on max(h, 0): the -1e-10 tolerance is for
rounding only and never improves a score (on the raw heights, a solution
scaled down to ~1e-9 with tiny negative heights faked a record). Valid
when every height is finite, h >= -1e-10, |h| <= 1e10 and the sum of
max(h, 0) is at least 1e-10.
"""
import json
import sys

import numpy as np

MIN_HEIGHT = -1e-10
MAX_ABS_HEIGHT = 1e10
MIN_ABS_SUM = 1e-10
# Direct convolution is exact to rounding and fast up to here; beyond, FFT
# convolution (agrees to ~1e-15 relative on the published solutions).
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
        h = np.maximum(h, 0.0)
        total = float(np.sum(h))
        if abs(total) < MIN_ABS_SUM:
            raise Invalid(f"the heights sum to {total!r}; |sum| must be at least {MIN_ABS_SUM:g}")
        n = len(h)
        conv = autoconvolution(h)
        objective = float(2 * n * np.max(conv) / (total * total))
        if not np.isfinite(objective) or objective <= 0:
            raise Invalid(f"the objective is {objective!r}, not a positive number")
    except Invalid as e:
        emit(False, reason=str(e))
    emit(True, objective, {"n": n, "c1_bound": objective})


if __name__ == "__main__":
    main(sys.argv)
