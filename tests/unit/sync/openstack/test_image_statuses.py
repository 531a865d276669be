"""A sync books an image as the notification table would have, for every glance status.

The table books ``active`` once glance holds the image's data (``image.upload``, or an
``image.create`` that carries a size).  A correction must book the same thing: an
image whose data is still on its way in is in transition (deferred, never booked live
and sizeless), one whose data stays in the store (``deactivated``) is live, one that
never got data or lost it (``killed``, ``deleted``, ``pending_delete``) is not there, and
one in a status the table does not know is deferred like a transition.  Both sides book
through one function, ``mapping.openstack_rules.image_state``.
"""

from __future__ import annotations

import logging

import pytest

from mapping.openstack import map_notification, rule_for
from mapping.openstack_rules import (
    IMAGE_STATUSES,
    ImageData,
    image_data,
    image_state,
    stored_image,
)
from reporting.openstack.resources import image
from tests.unit.sync.openstack.conftest import FakeCloud
from tests.unit.sync.openstack.test_adapter import observe

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


@pytest.mark.parametrize("status", ["frozen", "", None, 7])
def test_a_status_the_table_does_not_know_is_deferred(status: object) -> None:
    # Nothing says whether glance holds the data: booking it live could bill an image
    # that is not there, reading it as gone could end one that is.  Deferred, it is
    # neither corrected nor deleted by absence.
    assert image_data(status) is ImageData.UNKNOWN
    observed = image({**BASE, "status": status, "size": 2 * GIB})
    assert observed is not None
    assert observed.in_transition
    assert observed.state is None and observed.size is None


@pytest.mark.parametrize("status", sorted(IMAGE_STATUSES))
def test_the_sync_books_through_the_tables_state_function(status: str) -> None:
    observed = image({**BASE, "status": status, "size": GIB})
    data = image_data(status)
    if observed is None:
        assert data is ImageData.ABSENT
        return
    assert observed.state == image_state(data)
    assert observed.in_transition is (data is not ImageData.STORED)


def test_the_table_books_images_through_the_same_function() -> None:
    for oslo_type in ("image.upload", "image.create"):
        assert rule_for(oslo_type).state is stored_image  # type: ignore[union-attr]
    assert stored_image({"status": "saving"}) == image_state(ImageData.STORED) == table_state()


def test_a_run_names_the_unknown_statuses_it_deferred(
    fake_cloud: FakeCloud, clouds_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake_cloud.images([{**BASE, "status": "frozen", "size": GIB},
                       {**BASE, "id": "img-2", "status": "frozen", "size": GIB}], hidden=[])
    caplog.set_level(logging.WARNING, logger="reporting.openstack.adapter")
    observation = observe(clouds_env)
    images = [o for o in observation.resources if o.resource_type == "image"]
    assert [(o.resource_id, o.in_transition) for o in images] == [
        ("img-1", True), ("img-2", True)]
    assert "image" in observation.enumerated_types  # the listing itself was complete
    assert ("cloud c1: 2 images have glance status 'frozen', which the notification table "
            "does not know") in caplog.text
