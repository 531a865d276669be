"""Reconciliation: the periodic sync that books what notifications missed (SPEC §6)."""
