"""Find a 29 x 29 matrix of +1/-1 entries with a large determinant.

The program writes solution.json in its working directory:
{"matrix": [[+1 or -1, ... 29], ... 29]}. A separate evaluator computes the
exact |det| and scores |det| / (2^28 * 7^12 * 342).
"""
import json

import numpy as np

N = 29


# EVOLVE-BLOCK-START
def residue_circulant(n):
    """Circulant matrix whose first row marks the quadratic residues mod n."""
    residues = {(k * k) % n for k in range(1, n)}
    first_row = np.array([1] + [1 if k in residues else -1 for k in range(1, n)])
    return np.array([np.roll(first_row, shift) for shift in range(n)])


def log_abs_det(matrix):
    sign, logdet = np.linalg.slogdet(matrix.astype(float))
    return logdet if sign != 0 else -np.inf


def hill_climb(matrix, trials, rng):
    """Try flipping random single entries, keeping a flip whenever |det| grows."""
    best = log_abs_det(matrix)
    n = len(matrix)
    for _ in range(trials):
        i, j = rng.integers(n), rng.integers(n)
        matrix[i, j] *= -1
        value = log_abs_det(matrix)
        if value > best:
            best = value
        else:
            matrix[i, j] *= -1
    return matrix


def construct_matrix():
    rng = np.random.default_rng(0)
    matrix = residue_circulant(N)
    return hill_climb(matrix, trials=20, rng=rng)
# EVOLVE-BLOCK-END


def main():
    matrix = np.asarray(construct_matrix(), dtype=int)
    assert matrix.shape == (N, N) and np.all(np.abs(matrix) == 1)
    with open("solution.json", "w") as f:
        json.dump({"matrix": matrix.tolist()}, f)
    ratio = abs(np.linalg.det(matrix)) / (2**28 * 7**12 * 342)
    print(f"|det| ratio: {ratio:.6f}")


if __name__ == "__main__":
    main()
