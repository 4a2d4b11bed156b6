"""HTTP surfaces: /metrics, health, the landing page and the /api/v1 admin routes."""
