"""Traffic metrics from /app/metrics/v1/: aligned minute windows, exact counters, no gaps."""

from exporter.traffic.families import SPECS
from exporter.traffic.poller import TrafficPoller
from exporter.traffic.reply import TrafficSource

__all__ = ["SPECS", "TrafficPoller", "TrafficSource"]
