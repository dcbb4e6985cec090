"""When ``measure`` asks a starting server for /health (:func:`claimcheck.measure.server.
wait_healthy`): the waits between asks, worked out by hand on a clock the test holds. The
server is a stand-in object answering ``alive``/``healthy`` by that clock; the function
under test is the real one."""

from __future__ import annotations

import pytest

from claimcheck.measure import server as srv


class Clock:
    """time.monotonic and time.sleep on a clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(round(s, 6))
        self.now += s

    def time(self) -> float:
        return 1.8e9 + self.now


class StartingServer:
    """Up (``/health`` answers 200) from ``up_at`` s on the clock; never, with None."""

    base_url = "http://127.0.0.1:1"

    def __init__(self, clock: Clock, up_at: float | None) -> None:
        self.clock, self.up_at, self.asks = clock, up_at, []

    def alive(self) -> bool:
        return True

    def healthy(self) -> bool:
        self.asks.append(round(self.clock.now, 6))
        return self.up_at is not None and self.clock.now >= self.up_at

    def log_size(self) -> int:
        return 0

    def tail(self) -> str:
        return "log tail"

    def cause(self) -> str:
        return ""


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(srv.time, "monotonic", c.monotonic)
    monkeypatch.setattr(srv.time, "sleep", c.sleep)
    monkeypatch.setattr(srv.time, "time", c.time)
    return c


def test_a_quick_server_is_seen_soon_after_it_is_up(clock):
    s = StartingServer(clock, up_at=0.3)
    srv.wait_healthy(s, timeout_s=900)
    # asks at 0, 0.05, 0.15 (0.05 + 0.1), 0.35 (+ 0.2): up at 0.3, seen at 0.35
    assert s.asks == [0.0, 0.05, 0.15, 0.35]
    assert clock.sleeps == [0.05, 0.1, 0.2]


def test_a_long_start_is_asked_every_poll_s(clock):
    s = StartingServer(clock, up_at=300.0)
    srv.wait_healthy(s, timeout_s=900)
    # 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, then 2 s: 3.15 s after 6 waits, then every 2 s
    assert clock.sleeps[:7] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    assert set(clock.sleeps[6:]) == {2.0}
    assert 300.0 <= s.asks[-1] < 302.0


def test_the_time_limit_ends_the_wait_when_it_passes(clock):
    s = StartingServer(clock, up_at=None)
    with pytest.raises(srv.ServerError, match="within 4 s"):
        srv.wait_healthy(s, timeout_s=4)
    # asks at 0 ... 3.15 (the doubling), then one wait to 4 s + 10 ms, not on to 5.15 s
    assert clock.sleeps[-1] == pytest.approx(4.01 - 3.15)
    assert clock.now == pytest.approx(4.01)
