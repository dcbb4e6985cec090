"""Tick labels on a log streams axis: none run together (the decode-rows figures' 56 and 64,
224 and 256 did)."""

from claimcheck.figures.plot_common import spaced_labels


def test_close_ticks_leave_the_lower_label_blank():
    # 64 / 56 = 1.14 and 256 / 224 = 1.14, under 1.25: the lower of each pair is blank,
    # the largest tick keeps its label
    assert spaced_labels([8, 24, 40, 56, 64]) == ["8", "24", "40", "", "64"]
    assert spaced_labels([256, 64, 224, 160]) == ["64", "160", "", "256"]


def test_spaced_ticks_keep_every_label():
    # each at least 1.25 times the one before (128 / 96 = 1.33, 256 / 192 = 1.33)
    assert spaced_labels([96, 128, 192, 256, 384, 512]) == [
        "96", "128", "192", "256", "384", "512"]
    assert spaced_labels([1]) == ["1"]
    assert spaced_labels([1000, 2000]) == ["1,000", "2,000"]


def test_a_run_of_close_ticks_labels_every_other_one_it_can():
    # 10 labelled; 11 and 12 under 12.5; 13 labelled (>= 12.5); 14 the largest, under 16.25:
    # it takes 13's place
    assert spaced_labels([10, 11, 12, 13, 14]) == ["10", "", "", "", "14"]
