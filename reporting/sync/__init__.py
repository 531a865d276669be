"""Reconciliation: the periodic sync that books what notifications missed.

Documented in docs/reconciliation.md.
"""
