"""tally-simcloud: a simulated OpenStack world for development, demos, tests, benchmarks.

See docs/simcloud.md; the entry points are :class:`simcloud.config.WorldConfig`,
:class:`simcloud.server.SimCloudServer` and :func:`simcloud.driver.drive`.
"""
