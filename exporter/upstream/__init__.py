"""The only package that talks to the platform API."""

from exporter.upstream.auth import LoginRejected
from exporter.upstream.client import UpstreamClient, minute
from exporter.upstream.errors import UpstreamError
from exporter.upstream.operations import Operations
from exporter.upstream.reply import Reply

__all__ = ["LoginRejected", "Operations", "Reply", "UpstreamClient", "UpstreamError", "minute"]
