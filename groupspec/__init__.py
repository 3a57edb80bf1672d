"""groupspec's command line and report rendering: the one place that formats output for people."""

__version__ = "0.1.0"  # the one place the version is written; pyproject.toml reads it from here
