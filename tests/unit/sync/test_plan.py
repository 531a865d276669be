"""One test per rule of the diff, the deferral tables and the dating of corrections."""

from __future__ import annotations

import datetime as dt

import pytest

from mapping.event import correction_event_id, parse_timestamp, verb
from reporting.sync.observation import Observation, ObservedResource, ReportedDeletion
from reporting.sync.plan import ProjectionRow, RunContext, plan_corrections, unchanged_since

AT = dt.datetime(2026, 3, 10, 12, 0, 0)
OLD = AT - dt.timedelta(hours=3)
SETTLE = dt.timedelta(seconds=60)
SIZE = {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny"}


def ctx(settle: dt.timedelta = SETTLE, at: dt.datetime = AT) -> RunContext:
    return RunContext(run_id="run-1", platform="openstack", cloud="c1", at=at, settle=settle)


def observed(rid: str = "i1", *, state: str = "active", size: dict | None = SIZE,
             transition: bool = False, changed: dt.datetime | None = OLD,
             created: dt.datetime | None = OLD, project: str = "p1",
             rtype: str = "instance") -> ObservedResource:
    return ObservedResource(rtype, rid, project, state, size, transition, changed, created)


def row(rid: str = "i1", *, state: str | None = "active", size: dict | None = SIZE,
        live: bool = True, last: dt.datetime = OLD, project: str = "p1",
        rtype: str = "instance") -> ProjectionRow:
    return ProjectionRow(rtype, rid, project, state, size, live, last)


def obs(*resources: ObservedResource, deletions: tuple[ReportedDeletion, ...] = (),
        types: tuple[str, ...] = ("instance",), unknown: tuple[tuple[str, str], ...] = ()
        ) -> Observation:
    return Observation(resources=list(resources), deletions=list(deletions),
                       enumerated_types=set(types), unknown=set(unknown))


def only(plan):
    assert len(plan.corrections) == 1, plan.corrections
    return plan.corrections[0]


def ts(correction) -> dt.datetime:
    return parse_timestamp(correction.event["timestamp"]).replace(tzinfo=None)


# --- the three situations -------------------------------------------------------------

def test_missing_row_books_create_at_platform_creation_instant():
    plan = plan_corrections(ctx(), obs(observed()), [], set())
    c = only(plan)
    assert c.action == "create" and c.event["event_type"] == "sync.create"
    assert verb(c.event["event_type"]) == "create"
    assert ts(c) == OLD
    assert c.event["payload"]["size"] == SIZE and c.event["payload"]["state"] == "active"
    assert c.event["source"] == "reconciliation" and c.event["project_id"] == "p1"
    assert c.event["payload"]["provider"] == {"sync_run_id": "run-1"}


def test_create_without_platform_instant_is_dated_at_poll():
    c = only(plan_corrections(ctx(), obs(observed(created=None, changed=None)), [], set()))
    assert ts(c) == AT
    assert c.restated is None and c.events == [c.event]


def test_create_before_the_poll_is_restated_at_the_poll():
    c = only(plan_corrections(ctx(), obs(observed()), [], set()))
    assert c.restated is not None and c.events == [c.event, c.restated]
    again = c.restated
    assert again["event_type"] == "sync.update" and verb(again["event_type"]) == "update"
    assert parse_timestamp(again["timestamp"]).replace(tzinfo=None) == AT
    assert again["event_id"] == correction_event_id(
        "run-1", "openstack", "c1", "instance", "i1", "update") != c.event["event_id"]
    assert again["payload"] == {"state": "active", "size": SIZE, "provider": {
        "sync_run_id": "run-1", "dated_by": "poll", "restates": "sync.create"}}
    assert again["payload"]["size"] is not c.event["payload"]["size"]
    assert again["project_id"] == "p1" and again["source"] == "reconciliation"


def test_create_forced_past_a_newer_row_event_is_not_restated():
    newer = AT + dt.timedelta(hours=1)  # the update-only row's newest event is after the poll
    plan = plan_corrections(ctx(settle=dt.timedelta(0)), obs(observed()),
                            [row(live=False, last=newer)], set())
    c = only(plan)
    assert ts(c) == newer + dt.timedelta(microseconds=1) and c.restated is None


def test_absent_resource_books_delete_at_poll_with_last_sighting():
    seen = AT - dt.timedelta(minutes=10)
    plan = plan_corrections(ctx(), obs(), [row()], set(), {("instance", "i1"): seen})
    c = only(plan)
    assert c.action == "delete" and ts(c) == AT
    assert c.event["payload"]["provider"] == {
        "sync_run_id": "run-1", "dated_by": "poll",
        "polled_at": "2026-03-10T12:00:00.000000Z",
        "last_seen_alive": "2026-03-10T11:50:00.000000Z",
    }
    assert "state" not in c.event["payload"] and "size" not in c.event["payload"]


def test_absent_resource_never_seen_by_a_completed_run_says_so():
    c = only(plan_corrections(ctx(), obs(), [row()], set()))
    assert c.event["payload"]["provider"]["last_seen_alive"] is None


@pytest.mark.parametrize("change", [
    {"state": "shutoff"},
    {"size": {**SIZE, "vcpus": 2, "flavor": "m1.small"}},
    {"project": "p2"},
])
def test_differing_attributes_book_update_at_poll(change):
    plan = plan_corrections(ctx(), obs(observed(**change)), [row()], set())
    c = only(plan)
    assert c.action == "update" and ts(c) == AT
    assert c.event["project_id"] == change.get("project", "p1")


def test_matching_resource_is_no_correction_and_counts_nowhere():
    plan = plan_corrections(ctx(), obs(observed(transition=True)), [row()], set())
    assert plan.corrections == [] and plan.deferred == {"transition": 0, "recent": 0}


def test_unknown_size_is_neither_compared_nor_booked():
    plan = plan_corrections(ctx(), obs(observed(size=None)), [row()], set())
    assert plan.corrections == []
    c = only(plan_corrections(ctx(), obs(observed(size=None)), [], set()))
    assert "size" not in c.event["payload"]


def test_row_held_as_deleted_is_skipped():
    plan = plan_corrections(ctx(), obs(observed()), [], {("instance", "i1")})
    assert plan.corrections == []


def test_update_only_row_gets_a_create():
    c = only(plan_corrections(ctx(), obs(observed()), [row(live=False)], set()))
    assert c.action == "create"


# --- deferral: transition ----------------------------------------------------------------

def test_create_in_transition_is_deferred_as_transitional():
    plan = plan_corrections(ctx(), obs(observed(transition=True)), [], set())
    assert plan.corrections == [] and plan.deferred["transition"] == 1


def test_update_in_transition_is_deferred_as_transitional():
    plan = plan_corrections(ctx(), obs(observed(state="shutoff", transition=True)), [row()], set())
    assert plan.corrections == [] and plan.deferred["transition"] == 1


def test_both_reasons_count_once_as_transitional():
    recent = AT - dt.timedelta(seconds=5)
    plan = plan_corrections(ctx(), obs(observed(transition=True, changed=recent)), [], set())
    assert plan.deferred == {"transition": 1, "recent": 0}


def test_transition_defers_even_with_window_off():
    plan = plan_corrections(ctx(dt.timedelta(0)), obs(observed(transition=True)), [], set())
    assert plan.deferred["transition"] == 1 and plan.corrections == []


# --- deferral: recent ----------------------------------------------------------------------

RECENT = AT - dt.timedelta(seconds=30)
FUTURE = AT + dt.timedelta(seconds=30)


@pytest.mark.parametrize("changed", [RECENT, FUTURE, AT - SETTLE])
def test_create_platform_changed_inside_window_is_deferred(changed):
    plan = plan_corrections(ctx(), obs(observed(changed=changed)), [], set())
    assert plan.corrections == [] and plan.deferred["recent"] == 1


def test_create_over_existing_row_with_recent_event_is_deferred():
    plan = plan_corrections(ctx(), obs(observed()), [row(live=False, last=RECENT)], set())
    assert plan.deferred["recent"] == 1 and plan.corrections == []


def test_update_platform_changed_inside_window_is_deferred():
    plan = plan_corrections(ctx(), obs(observed(state="error", changed=RECENT)), [row()], set())
    assert plan.deferred["recent"] == 1


def test_update_row_newest_event_inside_window_is_deferred():
    plan = plan_corrections(ctx(), obs(observed(state="error")), [row(last=RECENT)], set())
    assert plan.deferred["recent"] == 1


def test_change_just_outside_window_is_booked():
    changed = AT - SETTLE - dt.timedelta(microseconds=1)
    c = only(plan_corrections(ctx(), obs(observed(changed=changed, created=changed)), [], set()))
    assert c.action == "create"


def test_resource_without_platform_instant_is_not_deferred_as_recent():
    c = only(plan_corrections(ctx(), obs(observed(changed=None)), [], set()))
    assert c.action == "create"


def test_window_off_books_recent_changes():
    c = only(plan_corrections(ctx(dt.timedelta(0)), obs(observed(changed=RECENT)), [], set()))
    assert c.action == "create"


def test_reported_delete_inside_window_is_deferred():
    deletion = ReportedDeletion("instance", "i1", "p1", RECENT)
    plan = plan_corrections(ctx(), obs(deletions=(deletion,)), [row()], set())
    assert plan.deferred == {"transition": 0, "recent": 1} and plan.corrections == []


def test_reported_delete_with_recent_row_event_is_deferred():
    deletion = ReportedDeletion("instance", "i1", "p1", OLD)
    plan = plan_corrections(ctx(), obs(deletions=(deletion,)), [row(last=RECENT)], set())
    assert plan.deferred["recent"] == 1 and plan.corrections == []


def test_absence_delete_with_recent_row_event_is_deferred():
    plan = plan_corrections(ctx(), obs(), [row(last=RECENT)], set())
    assert plan.deferred["recent"] == 1 and plan.corrections == []


def test_absence_delete_of_row_created_after_the_listing_is_deferred():
    # The listing was read before the projection: a create.end delivered in between.
    plan = plan_corrections(ctx(), obs(), [row(last=AT + dt.timedelta(milliseconds=200))], set())
    assert plan.deferred["recent"] == 1 and plan.corrections == []


# --- reported deletes ---------------------------------------------------------------------

def test_reported_delete_is_dated_at_platform_instant():
    deleted = AT - dt.timedelta(minutes=7)
    deletion = ReportedDeletion("instance", "i1", "p1", deleted)
    c = only(plan_corrections(ctx(), obs(deletions=(deletion,)), [row()], set()))
    assert c.action == "delete" and ts(c) == deleted
    assert c.event["payload"]["provider"] == {
        "sync_run_id": "run-1", "dated_by": "platform",
        "deleted_at": "2026-03-10T11:53:00.000000Z",
    }


def test_reported_delete_of_row_held_deleted_or_unknown_books_nothing():
    deletion = ReportedDeletion("instance", "i1", "p1", OLD)
    assert plan_corrections(ctx(), obs(deletions=(deletion,)), [], {("instance", "i1")}).corrections == []
    assert plan_corrections(ctx(), obs(deletions=(deletion,)), [], set()).corrections == []


def test_deletion_after_the_run_instant_is_deferred_not_dated_in_the_future():
    deletion = ReportedDeletion("instance", "i1", "p1", FUTURE)
    plan = plan_corrections(ctx(), obs(deletions=(deletion,)), [row()], set())
    assert plan.corrections == [] and plan.deferred["recent"] == 1
    # With the window off it is booked like an absence, at poll time.
    c = only(plan_corrections(ctx(dt.timedelta(0)), obs(deletions=(deletion,)), [row()], set()))
    assert ts(c) == AT and c.event["payload"]["provider"]["dated_by"] == "poll"


# --- the absence pass ---------------------------------------------------------------------

def test_absence_pass_runs_only_over_enumerated_types():
    rows = [row(), row("v1", rtype="volume", size={"size_gb": 1, "type": "x"})]
    plan = plan_corrections(ctx(), obs(types=("instance",)), rows, set())
    assert [(c.resource_type, c.action) for c in plan.corrections] == [("instance", "delete")]


def test_type_that_enumerated_nothing_still_takes_part():
    rows = [row("v1", rtype="volume", size={"size_gb": 1, "type": "x"})]
    c = only(plan_corrections(ctx(), obs(types=("volume",)), rows, set()))
    assert c.action == "delete"


def test_no_enumerated_type_books_no_delete():
    assert plan_corrections(ctx(), obs(types=()), [row()], set()).corrections == []


def test_unknown_resource_is_never_absent_nor_corrected():
    plan = plan_corrections(ctx(), obs(observed(state="weird"), unknown=(("instance", "i1"),)),
                            [row()], set())
    assert plan.corrections == []
    plan = plan_corrections(ctx(), obs(unknown=(("instance", "i1"),)), [row()], set())
    assert plan.corrections == []


def test_absence_pass_leaves_non_live_rows_alone():
    assert plan_corrections(ctx(), obs(), [row(live=False)], set()).corrections == []


# --- the one-microsecond rule ---------------------------------------------------------------

def test_correction_behind_the_rows_newest_event_is_dated_one_microsecond_past_it():
    newest = AT + dt.timedelta(hours=1)  # told instant went backwards
    c = only(plan_corrections(ctx(dt.timedelta(0)), obs(observed(state="error")),
                              [row(last=newest)], set()))
    assert ts(c) == newest + dt.timedelta(microseconds=1)
    c = only(plan_corrections(ctx(dt.timedelta(0)), obs(), [row(last=newest)], set()))
    assert ts(c) == newest + dt.timedelta(microseconds=1)
    deletion = ReportedDeletion("instance", "i1", "p1", OLD)
    c = only(plan_corrections(ctx(dt.timedelta(0)), obs(deletions=(deletion,)),
                              [row(last=OLD + dt.timedelta(seconds=1))], set()))
    assert ts(c) == OLD + dt.timedelta(seconds=1, microseconds=1)


def test_create_over_update_only_row_is_dated_past_its_newest_event():
    c = only(plan_corrections(ctx(), obs(observed(created=OLD)),
                              [row(live=False, last=OLD + dt.timedelta(minutes=1))], set()))
    assert ts(c) == OLD + dt.timedelta(minutes=1, microseconds=1)


# --- deterministic ids ----------------------------------------------------------------------

def test_correction_ids_are_deterministic_per_run_resource_and_action():
    first = only(plan_corrections(ctx(), obs(observed()), [], set()))
    again = only(plan_corrections(ctx(), obs(observed()), [], set()))
    assert first.event["event_id"] == again.event["event_id"] == correction_event_id(
        "run-1", "openstack", "c1", "instance", "i1", "create")
    other = RunContext(run_id="run-2", platform="openstack", cloud="c1", at=AT, settle=SETTLE)
    assert only(plan_corrections(other, obs(observed()), [], set())).event["event_id"] != \
        first.event["event_id"]


# --- an incremental run's resources of the types listed whole -----------------------------

SINCE = dt.datetime(2026, 3, 10, 11, 0, 30, 250000)  # floored: 11:00:30


def test_unchanged_since_takes_live_resources_of_whole_types_changed_before_the_bound():
    listed = obs(
        observed("lb-old", rtype="loadbalancer", changed=dt.datetime(2026, 3, 10, 11, 0, 29)),
        # changed in the bound's second: a platform keeping whole seconds may have
        # truncated a change after the bound, so it is diffed
        observed("lb-same-second", rtype="loadbalancer", changed=dt.datetime(2026, 3, 10, 11, 0, 30)),
        observed("lb-new", rtype="loadbalancer", changed=SINCE + dt.timedelta(hours=1)),
        observed("lb-undated", rtype="loadbalancer", changed=None),
        observed("lb-not-live", rtype="loadbalancer", changed=OLD),
        observed("i-listed-by-change", changed=OLD),
        types=("loadbalancer",))
    live = {("loadbalancer", rid) for rid in ("lb-old", "lb-same-second", "lb-new",
                                              "lb-undated")} | {("instance", "i-listed-by-change")}
    assert unchanged_since(listed, SINCE, live) == {("loadbalancer", "lb-old")}


def test_an_unchanged_resource_is_neither_diffed_nor_absent():
    listed = obs(observed("lb1", rtype="loadbalancer", size={"listeners": 1}),
                 types=("loadbalancer",))
    # no row read for it, and a row that differs: either would book a correction
    for rows in ([], [row("lb1", rtype="loadbalancer", size={"listeners": 9})]):
        plan = plan_corrections(ctx(), listed, rows, set(), unchanged={("loadbalancer", "lb1")})
        assert plan.corrections == []
    assert only(plan_corrections(ctx(), listed, [], set())).action == "create"
