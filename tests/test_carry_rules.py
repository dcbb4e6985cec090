"""Issue 42 item 2: the carry rules of claimcheck.model.carry, on numbers worked by hand."""

import math

import pytest

from claimcheck.model import carry as cc


def test_eta_carried_to_the_3090_by_its_datasheet():
    # eta 0.7 of the 3090's 936 GB/s = 655.2 GB/s; 16 GB of weights: 16 / 655.2 = 24.420 ms
    bw = cc.carried_rate(0.7, 936e9)
    assert bw == pytest.approx(655.2e9)
    assert 16e9 / bw == pytest.approx(0.024420, abs=1e-6)
    # with a 2 ms per-step time: 26.420 ms; as bytes at eta x BW: 2 ms x 655.2 GB/s = 1.3104 GB
    assert cc.carried_step_s(16e9, 0.7, 936e9, 0.002) == pytest.approx(0.026420, abs=1e-6)
    assert cc.step_as_bytes(0.002, 0.7, 936e9) == pytest.approx(1.3104e9)


def test_share_and_compute_carried_with_the_power_limit():
    # 618 TFLOP/s effective of the H200's dense 989.4 = 0.6246; on the 3090's 71 at 390 W
    # of its 350 W default: (390/350)^(1/3) = 1.11429^(1/3) = 1.03670 (1.0367^3 = 1.11418)
    s = cc.share(618e12, 989.4e12, "compute")
    assert s == pytest.approx(0.62462, abs=1e-5)
    r = cc.power_clock_ratio(390, 350)
    assert r == pytest.approx(1.03670, abs=1e-4)
    assert cc.carried_rate(s, 71e12, r) == pytest.approx(0.62462 * 71e12 * 1.03670, rel=1e-4)
    assert cc.power_clock_ratio(350, 350) == 1.0
    assert cc.power_clock_ratio(250, 350) == pytest.approx(0.8939, abs=1e-4)  # 0.8939^3=0.7143


def test_eta_and_step_time_fitted_from_two_formats():
    # eta 0.8 of 1,000 GB/s, t0 2 ms: 10 GB in 12.5 + 2 = 14.5 ms, 20 GB in 25 + 2 = 27 ms
    eta, t0 = cc.fit_eta_step([(10e9, 0.0145), (20e9, 0.027)], 1000e9)
    assert (eta, t0) == (pytest.approx(0.8), pytest.approx(0.002))


def test_the_h200_formats_give_no_physical_split():
    # the H200's one-stream steps on vLLM 0.33.0: BF16 51.62 GB in 14.905 ms, FP8 27.18 GB
    # in 9.979 ms: slope 4.926 ms / 24.44 GB, eta = 1 / (2.0155e-13 x 4.8e12) = 1.034 > 1
    with pytest.raises(cc.CarryError, match=r"eta 1\.03"):
        cc.fit_eta_step([(51.62e9, 0.014905), (27.18e9, 0.009979)], 4800e9)
    with pytest.raises(cc.CarryError, match="two or more byte counts"):
        cc.fit_eta_step([(10e9, 0.01)], 1000e9)


def test_bend_by_hand():
    # memory 10 GB / 1 TB/s = 10 ms (+5 ms per step); per stream: compute 1 GFLOP / 1 PFLOP/s
    # = 1 ms, memory 2 x 0.25 GB / 1 TB/s = 0.5 ms: bend at 10 / 0.5 = 20, with t0 15 / 0.5 = 30
    assert cc.bend_streams(10e9, 0.0, 0.25e9, 0.0, 1e12, 1e9, 1e12) == pytest.approx(20)
    assert cc.bend_streams(10e9, 0.005, 0.25e9, 0.0, 1e12, 1e9, 1e12) == pytest.approx(30)
    assert cc.bend_streams(10e9, 0.0, 0.5e9, 0.0, 1e12, 1e9, 1e12) is None  # never


def test_bad_inputs_name_the_field():
    with pytest.raises(cc.CarryError, match="power_limit_w"):
        cc.power_clock_ratio(0, 350)
    with pytest.raises(cc.CarryError, match="status"):
        cc.Term("eta", 0.7, "share", "guessed", (), "rule")
    with pytest.raises(cc.CarryError, match="value"):
        cc.Term("eta", math.nan, "share", "assumed", (), "rule")


def test_int8_mlp_rate_solved_and_joined_back_by_hand():
    # a body prefilled at 600 TFLOP/s, its non-MLP half at 500: 1/600 - 0.5/500 = 1/1500
    # leaves the MLP half, so the MLP ran at 0.5 x 1500 = 750 TOP/s
    assert cc.int8_mlp_rate(600e12, 500e12, 0.5) == pytest.approx(750e12, rel=1e-12)
    # joined back: 1 / (0.5/750 + 0.5/500) = 600, the measured rate
    assert cc.split_rate(0.5, 750e12, 500e12) == pytest.approx(600e12, rel=1e-12)
    # the article's 3090 at a 0.3 share of 284 TOP/s int8 on 70% of the FLOPs, 52 TFLOP/s
    # on the rest: 1 / (0.7/85.2 + 0.3/52) = 71.50 TFLOP/s
    assert cc.split_rate(0.7, 0.3 * 284e12, 52e12) == pytest.approx(71.503e12, rel=1e-4)
    assert cc.split_rate(0.0, 1e12, 52e12) == pytest.approx(52e12)


def test_int8_mlp_rate_refuses_a_body_too_fast_for_its_rest():
    # 1/1000 - 0.5/500 = 0: the MLP would take no time
    with pytest.raises(cc.CarryError) as e:
        cc.int8_mlp_rate(1000e12, 500e12, 0.5)
    assert e.value.field == "measured_flops_s"
    with pytest.raises(cc.CarryError) as e:
        cc.int8_mlp_rate(600e12, 500e12, 1.5)
    assert e.value.field == "mlp_fraction"
    with pytest.raises(cc.CarryError) as e:
        cc.split_rate(-0.1, 1e12, 1e12)
    assert e.value.field == "mlp_fraction"


def test_bend_seconds_and_factor_by_hand():
    from claimcheck.model.model import bend_seconds

    # p = 1: the sum; p = 2: the hypotenuse (30 and 40 ms: 50 ms); equal terms x 2^(1/p)
    assert bend_seconds(0.030, 0.040, 1.0) == pytest.approx(0.070)
    assert bend_seconds(0.030, 0.040, 2.0) == pytest.approx(0.050)
    assert bend_seconds(0.020, 0.020, 2.0) == pytest.approx(0.020 * math.sqrt(2))
    # large p: within 0.1% of the larger term
    assert bend_seconds(0.030, 0.040, 40.0) == pytest.approx(0.040, rel=1e-3)
    # the factor over max: (1 + 0.75^2)^(1/2) = 1.25
    assert cc.bend_factor(0.75, 2.0) == pytest.approx(1.25)
    assert cc.bend_factor(0.0, 1.7) == 1.0


def test_bend_exponent_fitted_back_from_its_own_curve():
    # steps drawn from p = 2.5 at ratios 0.3-0.9: the fit finds 2.5 on its 0.05 grid
    pts = [(r, cc.bend_factor(r, 2.5)) for r in (0.3, 0.5, 0.7, 0.9)]
    assert cc.fit_bend_exponent(pts) == pytest.approx(2.5)
    # (0.75, 1.25) is the 3-4-5 triangle: p = 2
    assert cc.fit_bend_exponent([(0.75, 1.25)]) == pytest.approx(2.0)
    # the largest step below a ratio of 0.3 does not show the exponent: refused, named
    with pytest.raises(cc.CarryError, match="points"):
        cc.fit_bend_exponent([(0.1, 1.02), (0.25, 1.03)])
    with pytest.raises(cc.CarryError, match="points.ratio"):
        cc.fit_bend_exponent([(1.5, 1.2)])
    with pytest.raises(cc.CarryError, match="points"):
        cc.fit_bend_exponent([])


def test_a_bend_exponent_below_one_is_refused_on_its_field():
    from claimcheck.model.model import Calibration, ModelInputError

    base = {"bandwidth_bytes_s": 1e12, "flops_s": 1e14, "request_overhead_s": 0.05,
            "bandwidth_source": "", "compute_source": ""}
    assert Calibration(**base, bend_exponent=1.95).bend_exponent == 1.95
    with pytest.raises(ModelInputError, match="Calibration.bend_exponent must be 1 or more, "
                       "got 0.5"):
        Calibration(**base, bend_exponent=0.5)
    for bad in (float("inf"), float("nan"), -2.0):
        with pytest.raises(ModelInputError, match="Calibration.bend_exponent must be a "
                           "finite number > 0"):
            Calibration(**base, bend_exponent=bad)
    # a step's factor must be a positive finite number
    with pytest.raises(cc.CarryError, match=r"points.factor: must be a finite number > 0"):
        cc.fit_bend_exponent([(0.5, -1.1)])
    with pytest.raises(cc.CarryError, match=r"ratio: must be in \[0, 1\], got 1.5"):
        cc.bend_factor(1.5, 2.0)
