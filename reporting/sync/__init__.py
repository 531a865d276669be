"""Reconciliation: the periodic sync that books what notifications missed (docs/reconciliation.md)."""
