"""What every test shares: configs are parsed as the exporter parses them, with the areas of
the registry (importing it hands their settings sections to config: ``declare_areas``)."""

import exporter.runtime.registry  # noqa: F401
