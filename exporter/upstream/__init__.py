"""The only package that talks to the platform API."""

from exporter.upstream.auth import LoginRejected
from exporter.upstream.client import Operations, Reply, UpstreamClient, minute
from exporter.upstream.errors import UpstreamError

__all__ = ["LoginRejected", "Operations", "Reply", "UpstreamClient", "UpstreamError", "minute"]
