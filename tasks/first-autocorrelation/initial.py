"""Find a non-negative step function whose autoconvolution has a small peak
relative to its squared integral (first autocorrelation inequality, C1;
minimise).

The program writes solution.json in its working directory:
{"heights": [h_0, ..., h_{n-1}]} (h >= 0), the heights of n equal steps on
[-1/4, 1/4]. A separate evaluator scores 2 n max(h * h) / (sum h)^2, with
h * h the full discrete autoconvolution.
"""
import json

import numpy as np
from scipy.linalg import toeplitz
from scipy.optimize import linprog


def c1_bound(heights):
    return 2 * len(heights) * np.max(np.convolve(heights, heights)) / np.sum(heights) ** 2


# EVOLVE-BLOCK-START
def flattest_partner(heights):
    """Solve the linear programme: among x >= 0 with sum x = n, the one whose
    convolution with the current heights has the smallest peak."""
    n = len(heights)
    column = np.concatenate((heights, np.zeros(n - 1)))
    row = np.zeros(n)
    row[0] = heights[0]
    conv_matrix = toeplitz(column, row)  # conv_matrix @ x == np.convolve(heights, x)
    cost = np.zeros(n + 1)
    cost[-1] = 1.0  # minimise the peak t
    a_ub = np.hstack([conv_matrix, -np.ones((2 * n - 1, 1))])
    b_ub = np.zeros(2 * n - 1)
    a_eq = np.concatenate([np.ones(n), [0.0]])[None, :]
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[n], bounds=[(0, None)] * n + [(None, None)], method="highs")
    return result.x[:n] if result.success else heights


def construct_heights():
    rng = np.random.default_rng(0)
    heights = rng.uniform(0, 1, 200)
    for _ in range(30):  # mix the current heights with their LP partner
        heights = 0.5 * heights + 0.5 * flattest_partner(heights)
    return np.maximum(heights, 0.0)
# EVOLVE-BLOCK-END


def main():
    heights = np.asarray(construct_heights(), dtype=float)
    with open("solution.json", "w") as f:
        json.dump({"heights": heights.tolist()}, f)
    print(f"C1 bound: {c1_bound(heights):.10f} with {len(heights)} steps")


if __name__ == "__main__":
    main()
