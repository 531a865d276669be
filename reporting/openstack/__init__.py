"""The OpenStack adapter of the reconciliation framework (SPEC §7)."""
