"""Pack 26 circles in the unit square, maximising the sum of their radii.

The program writes solution.json in its working directory:
{"centers": [[x, y], ... 26], "radii": [r, ... 26]}. A separate evaluator
checks that every circle lies inside [0, 1]^2 and that no two overlap, then
scores the sum of the radii.
"""
import json

import numpy as np

N_CIRCLES = 26


# EVOLVE-BLOCK-START
def place_centers():
    """A hub circle in the middle, a ring of 8 around it, a ring of 17 pushed
    out to the edges of the square."""
    centers = [(0.5, 0.5)]
    for k in range(8):
        angle = 2 * np.pi * k / 8
        centers.append((0.5 + 0.256 * np.cos(angle), 0.5 + 0.256 * np.sin(angle)))
    for k in range(17):
        angle = 2 * np.pi * k / 17
        centers.append((0.5 + 0.7 * np.cos(angle), 0.5 + 0.7 * np.sin(angle)))
    # Keep every centre a little inside the square.
    return np.clip(np.array(centers), 0.02, 0.98)


def size_radii(centers):
    """Largest radii that keep each circle inside the square, then shrink
    every overlapping pair in proportion until no two circles overlap."""
    n = len(centers)
    radii = np.min(np.concatenate([centers, 1 - centers], axis=1), axis=1)
    for i in range(n):
        for j in range(i + 1, n):
            dist = np.linalg.norm(centers[i] - centers[j])
            if radii[i] + radii[j] > dist:
                scale = dist / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    # A hair of slack so rounding never makes two circles touch too closely.
    return radii * (1 - 1e-9)


def construct_packing():
    centers = place_centers()
    radii = size_radii(centers)
    return centers, radii
# EVOLVE-BLOCK-END


def main():
    centers, radii = construct_packing()
    assert centers.shape == (N_CIRCLES, 2) and radii.shape == (N_CIRCLES,)
    with open("solution.json", "w") as f:
        json.dump({"centers": centers.tolist(), "radii": radii.tolist()}, f)
    print(f"sum of radii: {radii.sum():.10f}")


if __name__ == "__main__":
    main()
