"""What every test shares: configs are parsed as the exporter parses them, with the areas of
the registry (importing it hands their settings sections to config: ``declare_areas``); the
fake-upstream rig's fixtures (tests/rig/)."""

import exporter.runtime.registry  # noqa: F401

pytest_plugins = ("tests.rig.fixtures",)
