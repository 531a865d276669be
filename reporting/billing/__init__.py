"""Billing: price lists, rating of lifecycle intervals, statements, closed periods."""
