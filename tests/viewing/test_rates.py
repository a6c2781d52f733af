"""The report's intervals: Wilson's for one rate, Newcombe's hybrid score interval for a difference, checked against
the worked examples of Newcombe (1998), "Interval estimation for the difference between independent proportions"
(Statistics in Medicine 17: 873-890, Table II, method 10) and "Two-sided confidence intervals for the single
proportion" (Statistics in Medicine 17: 857-872, Table I, method 3), and as properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mast_otel.collector.report.rates import Rate, change, newcombe, wilson


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])  # fmt: skip
def test_wilson_matches_the_published_examples(k: int, n: int, low: float, high: float) -> None:
    got = wilson(k, n)
    assert got == pytest.approx((low, high), abs=5e-5)


@pytest.mark.parametrize(("k1", "n1", "k2", "n2", "low", "high"), [
    (56, 70, 48, 80, 0.0524, 0.3339),
    (9, 10, 3, 10, 0.1705, 0.8090),
    (5, 56, 0, 29, -0.0381, 0.1926),
    (0, 10, 0, 20, -0.1611, 0.2775),
    (10, 10, 0, 20, 0.6791, 1.0000),
])  # fmt: skip
def test_newcombe_matches_the_published_examples(k1: int, n1: int, k2: int, n2: int, low: float, high: float) -> (
        None):  # fmt: skip
    _, got_low, got_high = newcombe(k1, n1, k2, n2)
    assert (got_low, got_high) == pytest.approx((low, high), abs=5e-5)


counts = st.integers(min_value=1, max_value=5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@given(counts)
def test_the_wilson_interval_holds_the_rate_within_0_and_1(kn: tuple[int, int]) -> None:
    k, n = kn
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert (low == 0.0) == (k == 0) and (high == 1.0) == (k == n)


@given(counts, counts)
def test_the_difference_interval_holds_the_difference_and_mirrors(a: tuple[int, int], b: tuple[int, int]) -> None:
    d, low, high = newcombe(*a, *b)
    assert -1.0 - 1e-12 <= low <= d <= high <= 1.0 + 1e-12
    d2, low2, high2 = newcombe(*b, *a)
    assert (d2, low2, high2) == pytest.approx((-d, -high, -low))


@given(counts)
def test_the_same_rate_twice_is_within_noise(kn: tuple[int, int]) -> None:
    k, n = kn
    c = change(Rate(k, n), Rate(k, n))
    assert c is not None and c.noise and c.difference == 0


@given(st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=3))
def test_a_handful_of_runs_is_noise_against_a_handful(failed: int, before: int) -> None:
    """A quiet hour: 2 of 3 against 0 of 3 (or any two rates of 3 runs but all against none) is no evidence."""
    c = change(Rate(failed, 3), Rate(before, 3))
    assert c is not None and c.noise == (abs(failed - before) < 3)


def test_nothing_judged_on_a_side_is_no_change_at_all() -> None:
    assert change(Rate(0, 0), Rate(1, 10)) is None and change(Rate(1, 10), Rate(0, 0)) is None
    assert Rate(0, 0).value is None and Rate(0, 0).interval == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(4, 3)
