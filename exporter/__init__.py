"""cdnvideo-exporter: Prometheus exporter and admin gateway for the CDNvideo streaming platform."""

__version__ = "0.1.0"
