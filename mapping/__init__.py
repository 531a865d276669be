"""Tally's shared contract: the canonical event and the OpenStack notification table.

Imports no other Tally package (``tally_common``, ``collector``, ``reporting``, ``simcloud``).
"""
