"""The OpenStack adapter of the reconciliation framework (docs/reconciliation.md)."""
