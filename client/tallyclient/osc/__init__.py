"""``openstack tally ...``: the python-openstackclient plugin (``pip install ./client[openstack]``)."""
