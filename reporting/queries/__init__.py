"""Read-side query logic of the Reporting API (docs/reporting-queries.md): no Flask in here.

``resources``: the inventory (current and ``as_of``), one row, its events and its
lifecycle.  ``usage``: resource-seconds over a period, as pure arithmetic over
``reporting.fold.Interval`` plus the range query that feeds it.
"""
