"""Retransmission timeouts from measured round trips, as rust/zebra-proto/src/rto.rs.

The first timeout (aggregate_rto) holds until an answer is measured; then the
timeout follows srtt + 4 rttvar (RFC 6298), at least MIN_RTO_US and at most
MAX_RTO_US (or the first timeout, if longer). A timeout of a part sent once
doubles the timeout of what is sent next, at most 2^MAX_BACKOFF_SHIFT times,
until the next sample. Times are integer microseconds.
"""

MIN_RTO_US = 5_000
MAX_RTO_US = 1_000_000
MAX_BACKOFF_SHIFT = 4


class RttEstimator:
    def __init__(self, initial_us, min_us=MIN_RTO_US, max_us=None):
        self.initial_us = initial_us
        self.min_us = min_us
        self.max_us = max(max_us if max_us is not None else max(MAX_RTO_US, initial_us), min_us)
        self.srtt_us = None
        self.rttvar_us = 0
        self.shift = 0
        self.samples = 0

    def sample(self, rtt_us):
        self.samples += 1
        self.shift = 0
        if self.srtt_us is None:
            self.srtt_us = rtt_us
            self.rttvar_us = rtt_us // 2
        else:
            err = abs(self.srtt_us - rtt_us)
            self.rttvar_us = (self.rttvar_us * 3 + err) // 4
            self.srtt_us = (self.srtt_us * 7 + rtt_us) // 8

    def on_timeout(self):
        self.shift = min(self.shift + 1, MAX_BACKOFF_SHIFT)

    def _cap(self):
        return self.max_us

    def rto(self):
        if self.srtt_us is None:
            base = self.initial_us
        else:
            base = max(self.srtt_us + 4 * self.rttvar_us, self.min_us)
        return min(base << self.shift, self._cap())

    def backoff(self, retries):
        return min(self.rto() << min(retries, MAX_BACKOFF_SHIFT), self._cap())
