"""HTTP layer of the Reporting API: one blueprint per resource."""
