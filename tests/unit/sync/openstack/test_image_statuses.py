"""A sync books an image as the notification table would have, for every glance status.

The table books ``active`` once glance holds the image's data (``image.upload``, or an
``image.create`` that carries a size).  A correction must book the same thing: an
image whose data is still on its way in is in transition (deferred, never booked live
and sizeless), one whose data stays in the store (``deactivated``) is live, one that
never got data or lost it (``killed``, ``deleted``, ``pending_delete``) is not there.
"""

from __future__ import annotations

import pytest

from mapping.openstack import map_notification
from reporting.openstack.resources import image

GIB = 1073741824
BASE = {"id": "img-1", "owner": "p1", "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:01:00Z"}


def table_state() -> str:
    """The state the notification table books for an uploaded image."""
    payload = {"id": "img-1", "owner": "p1", "size": GIB, "status": "active"}
    mapped = map_notification("c1", {"project_id": "p1"}, "image.localhost", "image.upload",
                              payload, {"timestamp": "2026-01-01 00:00:00.000000",
                                        "message_id": "m-1"})
    assert mapped is not None
    return str(mapped["payload"]["state"])


@pytest.mark.parametrize("status", ["active", "deactivated"])
def test_an_image_holding_data_is_live_as_the_table_books_it(status: str) -> None:
    observed = image({**BASE, "status": status, "size": 2 * GIB})
    assert observed is not None
    assert observed.state == table_state() == "active"
    assert observed.size == {"size_gb": 2.0}
    assert not observed.in_transition


@pytest.mark.parametrize("status", ["queued", "saving", "uploading", "importing"])
def test_an_image_still_uploading_is_in_transition(status: str) -> None:
    observed = image({**BASE, "status": status, "size": None})
    assert observed is not None
    assert observed.in_transition
    assert observed.state is None  # nothing a collector event would book yet


@pytest.mark.parametrize("status", ["killed", "deleted", "pending_delete"])
def test_an_image_without_data_is_not_there(status: str) -> None:
    assert image({**BASE, "status": status, "size": None}) is None
