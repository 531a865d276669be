"""The real-services tier: Tally against real OpenStack services from PyPI (tox -e realnova)."""
