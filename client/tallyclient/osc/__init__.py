"""``openstack tally ...``: the python-openstackclient plugin (``pip install tally[openstack]``)."""
