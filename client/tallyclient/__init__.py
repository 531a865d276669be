"""The Reporting API's clients: the ``tally`` CLI (``tallyclient.cli``) and the
``openstack tally`` plugin (``tallyclient.osc``).

A distribution of its own (``pip install ./client``): it talks HTTP to the Reporting
API and imports nothing of the server packages, so a laptop needs neither Flask nor
SQLAlchemy nor oslo.messaging to run it.
"""
