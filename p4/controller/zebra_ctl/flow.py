"""The switch CPU's aggregate flow to one (job, server), as rust/zebra-proto/src/flow.rs.

The round trip of its parts (RttEstimator, rto.py) and a congestion window over the parts
in flight: INITIAL_WINDOW at first, one more per window's worth of acknowledgements, halved
(at least 1) when a part sent once times out or is known lost, at most once per timeout
interval. Parts beyond the window wait in order.
"""

from collections import deque

from .rto import RttEstimator

INITIAL_WINDOW = 8
MAX_WINDOW = 512


class Flow:
    def __init__(self, initial_rto_us):
        self.rtt = RttEstimator(initial_rto_us)
        self.window = INITIAL_WINDOW
        self.acked = 0
        self.in_flight = 0
        self.queue = deque()
        self.cut_at = None

    def enqueue(self, key):
        self.queue.append(key)

    def next_to_send(self):
        """The next waiting part the window lets out (counted in flight), or None."""
        if self.in_flight >= self.window or not self.queue:
            return None
        self.in_flight += 1
        return self.queue.popleft()

    def on_ack(self, rtt_us):
        """rtt_us: the part's round trip if it was sent once, else None."""
        self.in_flight = max(self.in_flight - 1, 0)
        if rtt_us is not None:
            self.rtt.sample(rtt_us)
        self.acked += 1
        if self.acked >= self.window:
            self.acked = 0
            self.window = min(self.window + 1, MAX_WINDOW)

    def on_timeout(self, now):
        self.rtt.on_timeout()
        self.on_loss(now)

    def on_loss(self, now):
        """A part known lost: the window halves (once per timeout), the timeout stays."""
        if self.cut_at is None or now - self.cut_at >= self.rtt.rto():
            self.window = max(self.window // 2, 1)
            self.acked = 0
            self.cut_at = now

    def reorder_window(self):
        """How long after the acknowledgement of a part sent later an earlier one counts as lost."""
        return (self.rtt.srtt_us if self.rtt.srtt_us is not None else self.rtt.rto()) // 4

    def on_abandon(self):
        self.in_flight = max(self.in_flight - 1, 0)
