#!/usr/bin/python3
"""Trusted evaluator: maximal determinant of a 29 x 29 +1/-1 matrix.

Reads only the solution file named on the command line and prints one JSON
line: {"valid", "objective", "metrics", "reason"} ("unreadable": true when
the file is not JSON at all).

The solution {"matrix": [[+1/-1, ...] x 29] x 29}. The determinant is exact
(fraction-free Bareiss elimination on Python integers). Objective:
|det| / (2^28 * 7^12 * 342), the paper's normalisation (the best known
matrix has |det| = 2^28 * 7^12 * 320, ratio 0.935673).
"""
import json
import sys

N = 29
NORMALISER = 2**28 * 7**12 * 342


class Invalid(Exception):
    pass


def emit(valid, objective=None, metrics=None, reason="", unreadable=False):
    out = {"valid": valid, "objective": objective, "metrics": metrics or {}, "reason": reason}
    if unreadable:
        out["unreadable"] = True
    print(json.dumps(out, allow_nan=False))
    sys.exit(0)


def matrix_of(data):
    if not isinstance(data, dict) or not isinstance(data.get("matrix"), list):
        raise Invalid('the solution must be an object {"matrix": [[+1 or -1, ...], ...]}')
    rows = data["matrix"]
    if len(rows) != N:
        raise Invalid(f"the matrix must have {N} rows (got {len(rows)})")
    matrix = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != N:
            raise Invalid(f"row {i} must be a list of {N} entries")
        out = []
        for j, x in enumerate(row):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or x not in (1, -1):
                raise Invalid(f"entry [{i}][{j}] is {x!r}; entries must be +1 or -1")
            out.append(int(x))
        matrix.append(out)
    return matrix


def bareiss_determinant(a):
    """Exact determinant of an integer matrix (fraction-free elimination)."""
    m = [row[:] for row in a]
    n = len(m)
    sign = 1
    previous_pivot = 1
    for k in range(n - 1):
        if m[k][k] == 0:
            swap = next((i for i in range(k + 1, n) if m[i][k] != 0), None)
            if swap is None:
                return 0
            m[k], m[swap] = m[swap], m[k]
            sign = -sign
        pivot = m[k][k]
        row_k = m[k]
        for i in range(k + 1, n):
            row_i = m[i]
            factor = row_i[k]
            for j in range(k + 1, n):
                # Exact: Bareiss guarantees divisibility by the previous pivot.
                row_i[j] = (row_i[j] * pivot - factor * row_k[j]) // previous_pivot
            row_i[k] = 0
        previous_pivot = pivot
    return sign * m[n - 1][n - 1]


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
        matrix = matrix_of(data)
        determinant = abs(bareiss_determinant(matrix))
        if determinant == 0:
            raise Invalid("the matrix is singular (determinant 0)")
    except Invalid as e:
        emit(False, reason=str(e))
    objective = determinant / NORMALISER  # exact integers, correctly rounded quotient
    emit(True, objective, {"n": N, "abs_determinant": str(determinant), "det_ratio": objective})


if __name__ == "__main__":
    main(sys.argv)
