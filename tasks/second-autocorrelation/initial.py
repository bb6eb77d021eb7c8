"""Find a non-negative step function whose autoconvolution is as "flat" as
possible (second autocorrelation inequality, C2; maximise).

The program writes solution.json in its working directory:
{"heights": [h_0, ..., h_{n-1}]} (h >= 0). A separate evaluator computes
c = h * h (full autoconvolution, m values) and scores
L2^2 / (L1 * Linf), where L2^2 integrates the piecewise-linear function
through 0, c_0, ..., c_{m-1}, 0 on m + 2 equally spaced points of
[-1/2, 1/2], L1 = sum|c| / (m + 1) and Linf = max|c|.
"""
import json

import numpy as np


def c2_ratio(heights):
    c = np.convolve(heights, heights)
    y = np.concatenate(([0.0], c, [0.0]))
    width = 1.0 / (len(c) + 1)
    l2_squared = width / 3.0 * np.sum(y[:-1] ** 2 + y[:-1] * y[1:] + y[1:] ** 2)
    return l2_squared / (np.sum(np.abs(c)) / (len(c) + 1) * np.max(np.abs(c)))


# EVOLVE-BLOCK-START
def ascent_direction(params, sharpness):
    """Gradient of the C2 ratio of h = params^2 with respect to params, with
    the peak max(c) softened into a softmax-weighted average of c so that
    every near-peak value is pushed down, not only the largest one."""
    h = params**2
    c = np.convolve(h, h)
    m = len(c)
    width = 1.0 / (m + 1)
    padded = np.concatenate(([0.0], c, [0.0]))
    l2 = width / 3.0 * np.sum(padded[:-1] ** 2 + padded[:-1] * padded[1:] + padded[1:] ** 2)
    l1 = np.sum(c) / (m + 1)
    z = sharpness * c / np.max(c)
    weights = np.exp(z - z.max())
    weights /= weights.sum()
    peak = np.sum(weights * c)
    ratio = l2 / (l1 * peak)
    d_l2 = width / 3.0 * (4 * c + padded[:-2] + padded[2:])
    d_c = d_l2 / (l1 * peak) - ratio / (l1 * (m + 1)) - ratio / peak * weights
    d_h = 2 * np.correlate(d_c, h, mode="valid")
    return d_h * 2 * params


def adam_ascent(params, steps, learning_rate, sharpness=150.0):
    first = np.zeros_like(params)
    second = np.zeros_like(params)
    best, best_params = -np.inf, params.copy()
    for t in range(1, steps + 1):
        ratio = c2_ratio(params**2)
        if ratio > best:
            best, best_params = ratio, params.copy()
        grad = ascent_direction(params, sharpness)
        first = 0.9 * first + 0.1 * grad
        second = 0.999 * second + 0.001 * grad**2
        step = learning_rate * (first / (1 - 0.9**t)) / (np.sqrt(second / (1 - 0.999**t)) + 1e-12)
        params = params + step
    return best_params


def construct_heights():
    rng = np.random.default_rng(42)
    params = rng.uniform(0, 1, 256)
    params = adam_ascent(params, steps=1500, learning_rate=0.01)
    for _ in range(2):  # upsample by two, twice: 256 -> 512 -> 1024 steps
        params = np.repeat(params, 2)
        params = adam_ascent(params, steps=400, learning_rate=0.005)
    return params**2
# EVOLVE-BLOCK-END


def main():
    heights = np.asarray(construct_heights(), dtype=float)
    with open("solution.json", "w") as f:
        json.dump({"heights": heights.tolist()}, f)
    print(f"C2 ratio: {c2_ratio(heights):.10f} with {len(heights)} steps")


if __name__ == "__main__":
    main()
