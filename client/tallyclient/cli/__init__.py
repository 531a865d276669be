"""``tally``: the operator CLI, a client of the Reporting API over HTTP (docs/cli.md)."""
