"""Find a step function whose autoconvolution has a small peak relative to
its squared integral (third autocorrelation inequality, C3; minimise).

The program writes solution.json in its working directory:
{"heights": [h_0, ..., h_{n-1}]}, the heights of n equal steps on
[-1/4, 1/4] (heights may be negative). A separate evaluator scores
|2 n max|h * h| / (sum h)^2|, with h * h the full discrete autoconvolution.
"""
import json

import numpy as np


# EVOLVE-BLOCK-START
def construct_heights():
    """A bump in the middle with two gentle ripples on top of it."""
    n = 400
    x = np.linspace(-0.25, 0.25, n)
    bump = np.exp(-(x**2) / (2 * 0.1**2))
    ripple_even = 0.065 * np.cos(6 * np.pi * x)
    ripple_odd = 0.05 * np.sin(10 * np.pi * x)
    return bump + ripple_even + ripple_odd
# EVOLVE-BLOCK-END


def c3_bound(heights):
    conv = np.convolve(heights, heights)
    return abs(2 * len(heights) * np.max(np.abs(conv)) / np.sum(heights) ** 2)


def main():
    heights = np.asarray(construct_heights(), dtype=float)
    with open("solution.json", "w") as f:
        json.dump({"heights": heights.tolist()}, f)
    print(f"C3 bound: {c3_bound(heights):.10f} with {len(heights)} steps")


if __name__ == "__main__":
    main()
