"""The leave-one-set-out fit scores a point by the worst training set, so that a gain on one set
cannot buy a loss on another (benchmarks/tools/loso_relevance.py)."""

from __future__ import annotations

from benchmarks.tools.loso_relevance import objective

# (precision, completeness, differentiation)
GAINS_ON_ONE = {"a": (0.95, 0.95, 0.95), "b": (0.65, 0.85, 0.85)}  # b misses precision by 0.05
EVEN = {"a": (0.75, 0.85, 0.85), "b": (0.72, 0.82, 0.82)}  # both hold every target


def test_the_worst_set_decides_and_a_big_gain_elsewhere_does_not_buy_a_miss() -> None:
    names = ["a", "b"]
    assert objective(EVEN, names) > objective(GAINS_ON_ONE, names)
    # the mean alone prefers the point where one set misses its target
    assert objective(GAINS_ON_ONE, names, worst=False) > objective(EVEN, names, worst=False)


def test_equal_worst_sets_are_told_apart_by_the_mean() -> None:
    better_elsewhere = {"a": (0.9, 0.9, 0.9), "b": (0.72, 0.82, 0.82)}
    assert objective(better_elsewhere, ["a", "b"]) > objective(EVEN, ["a", "b"])
    assert objective(EVEN, ["a", "b"])[0] == objective(better_elsewhere, ["a", "b"])[0]


def test_points_equal_on_every_set_s_binding_figure_are_told_apart_by_the_others() -> None:
    # both sets are bound by completeness, which the two points share: the grid's order must
    # not decide, the figures above their targets do
    sharper = {"a": (0.93, 0.84, 0.92), "b": (0.71, 0.86, 0.91)}
    blunter = {"a": (0.90, 0.84, 0.92), "b": (0.71, 0.86, 0.91)}
    names = ["a", "b"]
    assert objective(sharper, names)[:2] == objective(blunter, names)[:2]
    assert objective(sharper, names) > objective(blunter, names)
