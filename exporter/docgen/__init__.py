"""Reference docs generated from the code: ``python -m exporter.docgen``."""
