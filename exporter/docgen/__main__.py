"""``python -m exporter.docgen``: write the generated docs (``--check``: fail if stale)."""

from __future__ import annotations

import sys

from exporter.docgen.generate import main

sys.exit(main())
