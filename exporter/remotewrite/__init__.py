"""Prometheus remote write of each traffic minute's final figures at the minute's own
timestamp (the true-time series): config section, wire message, pending store, sender."""
