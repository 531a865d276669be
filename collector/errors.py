"""Errors of the collector that end the process with a clear message."""


class ConfigurationError(Exception):
    """A configuration value the collector cannot run with (one line, no traceback)."""
