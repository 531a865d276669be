"""Tally's shared contract: the canonical event and the OpenStack notification table.

Imports nothing from ``collector``, ``reporting`` or ``simcloud``.
"""
