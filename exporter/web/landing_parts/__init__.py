"""Each area's part of the landing page's account section, one module per area, named as the
area is in the registry (``exporter/web/landing_parts/<name>.py`` with ``PART``): the page
reads the registry and takes the part of each area, in the registry's order."""
