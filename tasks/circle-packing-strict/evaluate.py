#!/usr/bin/python3
"""Trusted evaluator: circles packed in the unit square.

Reads only the solution file named on the command line and prints one JSON
line: {"valid", "objective", "metrics", "reason"} ("unreadable": true when
the file is not JSON at all). The objective is the sum of the radii.

Valid when there are exactly N_CIRCLES circles, every number is finite, no
radius is negative, every circle lies inside [0, 1]^2 and no two circles
overlap, both up to --tolerance (x - r >= -tol, x + r <= 1 + tol,
|c_i - c_j| >= r_i + r_j - tol).
"""
import json
import sys

import numpy as np

N_CIRCLES = 26


class Invalid(Exception):
    pass


def emit(valid, objective=None, metrics=None, reason="", unreadable=False):
    out = {"valid": valid, "objective": objective, "metrics": metrics or {}, "reason": reason}
    if unreadable:
        out["unreadable"] = True
    print(json.dumps(out, allow_nan=False))
    sys.exit(0)


def numbers(value, name, length):
    if not isinstance(value, list) or len(value) != length:
        raise Invalid(f'"{name}" must be a list of {length} numbers')
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise Invalid(f'{name}[{i}] is not a number')
    try:
        arr = np.array(value, dtype=np.float64)
    except OverflowError:
        raise Invalid(f'"{name}" holds a number too large for a double')
    if not np.all(np.isfinite(arr)):
        raise Invalid(f'"{name}" holds NaN or infinite values')
    return arr


def parse(data):
    if not isinstance(data, dict) or "centers" not in data or "radii" not in data:
        raise Invalid('the solution must be an object {"centers": [[x, y], ...], "radii": [...]}')
    centers_raw = data["centers"]
    if not isinstance(centers_raw, list) or len(centers_raw) != N_CIRCLES:
        raise Invalid(f'"centers" must be a list of {N_CIRCLES} [x, y] pairs')
    centers = np.stack([numbers(c, f"centers[{i}]", 2) for i, c in enumerate(centers_raw)])
    radii = numbers(data["radii"], "radii", N_CIRCLES)
    return centers, radii


def check(centers, radii, tol):
    """Raise Invalid naming the first violation; return the largest raw violations.

    The comparisons are written exactly as stated above (x - r < -tol,
    x + r > 1 + tol, dist < r_i + r_j - tol) so that results at the edge of
    the tolerance agree with the published evaluators bit for bit.
    """
    if np.any(radii < 0):
        i = int(np.argmax(radii < 0))
        raise Invalid(f"circle {i} has a negative radius {radii[i]!r}")
    for i in range(N_CIRCLES):
        x, y, r = centers[i, 0], centers[i, 1], radii[i]
        if x - r < -tol or x + r > 1 + tol or y - r < -tol or y + r > 1 + tol:
            raise Invalid(f"circle {i} (center ({x!r}, {y!r}), radius {r!r}) is not inside the unit square (tolerance {tol:g})")
    worst_overlap = -np.inf
    for i in range(N_CIRCLES):
        for j in range(i + 1, N_CIRCLES):
            dx = centers[i, 0] - centers[j, 0]
            dy = centers[i, 1] - centers[j, 1]
            dist = np.sqrt(dx * dx + dy * dy)
            worst_overlap = max(worst_overlap, radii[i] + radii[j] - dist)
            if dist < radii[i] + radii[j] - tol:
                raise Invalid(f"circles {i} and {j} overlap by {radii[i] + radii[j] - dist:.3e} (tolerance {tol:g})")
    x, y = centers[:, 0], centers[:, 1]
    boundary = np.max(np.stack([radii - x, x + radii - 1, radii - y, y + radii - 1]))
    return float(boundary), float(worst_overlap)


def main(argv):
    if len(argv) < 2:
        print("usage: evaluate.py SOLUTION_FILE [--tolerance T]", file=sys.stderr)
        sys.exit(2)
    tol = 0.0
    if "--tolerance" in argv:
        tol = float(argv[argv.index("--tolerance") + 1])
    try:
        with open(argv[1], "rb") as f:
            data = json.loads(f.read().decode("utf-8"))
    except Exception as e:  # any failure to read or parse means no solution
        emit(False, reason=f"the solution file is not readable JSON: {e}", unreadable=True)
    try:
        centers, radii = parse(data)
        max_boundary, max_overlap = check(centers, radii, tol)
    except Invalid as e:
        emit(False, reason=str(e))
    objective = float(np.sum(radii))
    emit(
        True,
        objective,
        {
            "sum_radii": objective,
            "min_radius": float(np.min(radii)),
            "max_boundary_excess": max_boundary,
            "max_overlap": max_overlap,
            "tolerance": tol,
        },
    )


if __name__ == "__main__":
    main(sys.argv)
