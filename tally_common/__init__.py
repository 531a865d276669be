"""The plumbing every Tally command shares: how a client names the Reporting API and
reads a token file, how a command checks its configuration files, applies the
environment aliases and sets up its logging, and the compact JSON text of a value.

Imports nothing from ``mapping``, ``collector``, ``reporting`` or ``simcloud``: those
import it (an import-linter contract in pyproject.toml says so).
"""
