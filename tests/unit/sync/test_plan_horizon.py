"""The planner's deferral is bounded (docs/reconciliation.md, "Instants from the future").

A row whose newest event is dated past the horizon (the cloud's present plus ingest's
future skew: a sender's clock gone wrong, stored before ingest refused such events)
was deferred as recent by every run for ever, and every correction of it was dated one
microsecond past that event, which ingest now refuses.  Past the horizon an instant
neither defers nor dates anything."""

from __future__ import annotations

import datetime as dt

from reporting.fold import FoldEvent, fold
from reporting.sync.observation import ReportedDeletion
from reporting.sync.plan import RunContext, plan_corrections
from tests.unit.sync.test_plan import AT, OLD, SETTLE, obs, observed, only, row, ts

HORIZON = AT + dt.timedelta(minutes=5)
FAR = dt.datetime(2099, 1, 1)


def bounded(settle: dt.timedelta = SETTLE) -> RunContext:
    return RunContext(run_id="run-1", platform="openstack", cloud="c1", at=AT, settle=settle,
                      horizon=HORIZON)


def test_an_absent_row_with_an_event_from_the_far_future_is_deleted_at_the_poll():
    plan = plan_corrections(bounded(), obs(), [row(last=FAR)], set())
    c = only(plan)
    assert c.action == "delete" and ts(c) == AT
    assert plan.deferred == {"transition": 0, "recent": 0}
    assert plan.beyond_horizon == 1


def test_the_delete_ends_the_life_the_far_future_event_kept_open():
    # created at OLD, then a floatingip.update.end dated 2099; the delete at the poll
    # sorts before it, and an update after a delete revives nothing.
    c = only(plan_corrections(bounded(), obs(), [row(last=FAR)], set()))
    history = [FoldEvent("c", "floatingip.create.end", "p1", OLD, {"state": "DOWN"}, 1),
               FoldEvent("u", "floatingip.update.end", "p1", FAR, {"state": "ACTIVE"}, 2),
               FoldEvent(c.event["event_id"], c.event["event_type"], "", ts(c), {}, 3)]
    state, intervals = fold(history)
    assert state is not None and not state.live and state.deleted_at == AT
    assert intervals[-1].end == AT


def test_an_observed_change_of_such_a_row_is_booked_at_the_poll():
    c = only(plan_corrections(bounded(), obs(observed(state="stopped")), [row(last=FAR)], set()))
    assert c.action == "update" and ts(c) == AT


def test_a_platform_instant_past_the_horizon_defers_nothing_and_dates_nothing():
    plan = plan_corrections(bounded(), obs(observed(changed=FAR, created=FAR)), [], set())
    c = only(plan)
    assert c.action == "create" and ts(c) == AT and c.restated is None


def test_a_reported_deletion_past_the_horizon_is_booked_as_an_absence():
    deletion = ReportedDeletion("instance", "i1", "p1", FAR)
    c = only(plan_corrections(bounded(), obs(deletions=(deletion,)), [row()], set()))
    assert c.action == "delete" and ts(c) == AT
    assert c.event["payload"]["provider"]["dated_by"] == "poll"


def test_an_instant_within_the_horizon_is_still_deferred_as_recent():
    # A told instant behind the cloud's present: facts after it are true, not future.
    within = AT + dt.timedelta(minutes=4)
    plan = plan_corrections(bounded(), obs(), [row(last=within)], set())
    assert plan.corrections == [] and plan.deferred["recent"] == 1
    assert plan.beyond_horizon == 0


def test_a_correction_is_still_dated_past_a_newer_event_within_the_horizon():
    within = AT + dt.timedelta(minutes=4)
    c = only(plan_corrections(bounded(dt.timedelta(0)), obs(), [row(last=within)], set()))
    assert ts(c) == within + dt.timedelta(microseconds=1)
