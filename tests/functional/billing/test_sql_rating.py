"""The set-based PostgreSQL rating equals the pure rating, project by project."""

from __future__ import annotations

import collections
import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import (
    accounts,
    kinds,
    periods,
    rating,
    sql_close,
    sql_rating,
    statements,
    tiers,
    versions,
)
from reporting.db import engine as db_engine
from reporting.db.account_models import AccountMembership
from reporting.db.models import ResourceInterval
from tests.functional.billing.history import SMALL, empty_history, event, october, seed
from tests.functional.billing.test_close_property import (
    SIZED_PRICES,
    _flavor_tiered,
    _tiered,
    _tiers,
    _volume_typed,
    _volume_types,
    histories,
    register_share,
)

EXTRAS = [
    event("loadbalancer.create.end", "lb-1", "2026-10-04T00:00:00Z", resource_type="loadbalancer",
          state="ACTIVE", size={"listeners": 2, "pools": 3}),
    event("image.create.end", "img-1", "2026-10-04T00:00:00Z", resource_type="image",
          state="active", size={"size_gb": 0.123456789}),
    event("image.create.end", "img-2", "2026-10-04T00:00:00Z", resource_type="image",
          state="active"),
    event("floatingip.create.end", "fip-1", "2026-10-04T00:00:00Z", resource_type="floating_ip",
          state="DOWN", size={"ip_version": 4}),
    event("share.create.end", "sh-1", "2026-10-04T00:00:00Z", resource_type="share",
          state="available", size={"size_gb": 12}),
    event("router.create.end", "rt-1", "2026-10-04T00:00:00Z", resource_type="router",
          state="ACTIVE"),
    event("compute.instance.create.end", "old", "2026-09-20T00:00:00Z", project_id="p2",
          state="active", size={"vcpus": 2, "ram_gb": 0.5, "disk_gb": 0.3, "flavor": "custom"}),
]


def _python(session: Session, now: dt.datetime) -> dict[str, tuple[Decimal, int]]:
    start, end = periods.parse("2026-10")
    lines: dict[str, list[rating.Line]] = collections.defaultdict(list)
    for line in rating.rate_intervals(statements.intervals(session, "c1", start, end),
                                      versions.timeline(session, "c1"), start, end, now):
        lines[line.project_id].append(line)
    return {p: (rating.subtotal(x), sum(1 for y in x if y.unrated)) for p, x in lines.items()}


def _sql(session: Session, now: dt.datetime) -> dict[str, tuple[Decimal, int]]:
    start, end = periods.parse("2026-10")
    return sql_rating.project_subtotals(session, "c1", versions.timeline(session, "c1"),
                                        start, end, now)


def _project_lines_agree(session: Session, now: dt.datetime) -> int:
    """Each project's lines rated set-based (``sql_rating.project_lines``: their texts,
    subtotal, unrated count and tier lines) are the pure rating's; answers how many
    lines were compared."""
    start, end = periods.parse("2026-10")
    timeline = versions.timeline(session, "c1")
    projects = set(session.execute(sa.select(ResourceInterval.project_id)).scalars())
    compared = 0
    for project in sorted(projects | {"p-none"}):
        python = statements.python_project_lines(session, "c1", project, timeline, start, end,
                                                 now)
        found = sql_rating.project_lines(session, "c1", project, timeline, start, end, now)
        assert found == python, project
        assert [t.as_dict() for t in found.tier_lines] == [
            t.as_dict() for t in python.tier_lines]
        compared += len(found.texts)
    return compared


@pytest.fixture
def pg(pg_migrated_database: str) -> Any:
    engine = db_engine.make_engine(pg_migrated_database)
    factory = db_engine.make_sessionmaker(engine)
    with factory() as session:
        register_share(session)
        for document in SIZED_PRICES:
            versions.add(session, "default", document, "test", dt.datetime(2026, 12, 1))
        session.commit()
    yield factory
    engine.dispose()


@pytest.mark.parametrize("now", [dt.datetime(2026, 12, 15), dt.datetime(2026, 10, 16, 5, 30),
                                 dt.datetime(2026, 10, 1, 0, 0, 0, 1)])
def test_every_rate_kind_agrees(pg: sessionmaker[Session], now: dt.datetime) -> None:
    seed(pg, october() + EXTRAS)
    with pg() as session:
        python = _python(session, now)
        assert python and python == _sql(session, now)
        assert _project_lines_agree(session, now)
    if now.month == 12:
        # the image without a size and the router: unrated, one line per piece of the
        # timeline from the 4th (cut at p1's term dates 10-05, 10-12 06:00 and 10-25
        # and at default/2's 10-16: five pieces each)
        assert python["p1"][1] == 10 and python["p1"][0] > Decimal("1.90")
        assert python["p-free"] == (Decimal("0.00"), 0)


def _random_histories_agree(factory: sessionmaker[Session], examples: int,
                            instants: tuple[dt.datetime, ...]) -> None:
    """For drawn histories seeded into ``factory``'s database, the pure and the
    set-based ratings agree at each of ``instants``."""
    @given(history=histories())
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(history: list[dict[str, Any]]) -> None:
        with factory() as session:
            empty_history(session)
        seed(factory, history)
        with factory() as session:
            for now in instants:
                assert _python(session, now) == _sql(session, now)
                _project_lines_agree(session, now)

    run()


def test_random_histories_agree(pg: sessionmaker[Session]) -> None:
    _random_histories_agree(pg, 40, (dt.datetime(2026, 12, 15), dt.datetime(2026, 10, 20, 7)))


def test_prices_beyond_64_bits_take_the_exact_numeric_path(pg: sessionmaker[Session]) -> None:
    huge = {"effective_from": "2026-10-10T00:00:00Z", "currency": "EUR",
            "rates": {"instance": {"per": "hour",
                                   "by_flavor": {"m1.small": "999999999999.999999999999"}},
                      "volume": {"per": "gb_hour", "rate": "0.000000000001",
                                 "type_modifiers": {"ssd": "999999999999.999999999999"}}},
            "state_modifiers": {"instance": {"shutoff": "0.000000000007"}},
            "project_terms": {}}  # default/1's terms override shares, which it does not price
    with pg() as session:
        versions.add(session, "c1", huge, "test", dt.datetime(2026, 12, 1))
        session.commit()
    seed(pg, october() + EXTRAS)
    now = dt.datetime(2026, 12, 15)
    with pg() as session:
        start, end = periods.parse("2026-10")
        timeline = versions.timeline(session, "c1")
        ranges = kinds.ranges(timeline, start, end)
        priced = kinds.price(sql_rating.distinct_kinds(
            session, {"cloud": "c1", "pstart": start, "cap": end}, ranges), ranges)
        assert any(k.rated and not k.integer_safe(sql_rating.max_micros(start, end))
                   for k in priced)
        assert any(k.rated and k.integer_safe(sql_rating.max_micros(start, end)) for k in priced)
        python = _python(session, now)
        assert python == _sql(session, now)
        assert max(subtotal for subtotal, _unrated in python.values()) > Decimal("1e12")
        assert _project_lines_agree(session, now)


def test_a_kind_written_between_the_two_queries_is_priced_again(
    pg: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(pg, october() + EXTRAS)
    found = sql_rating.distinct_kinds
    calls: list[int] = []

    def first_without_volumes(session: Session, params: dict[str, Any],
                              ranges: Any = ()) -> list[Any]:
        kinds_found = found(session, params, ranges)
        calls.append(len(kinds_found))
        # as if the volumes' intervals were committed after the kinds were read
        return kinds_found if len(calls) > 1 else [k for k in kinds_found if k[0] != "volume"]

    monkeypatch.setattr(sql_rating, "distinct_kinds", first_without_volumes)
    now = dt.datetime(2026, 12, 15)
    with pg() as session:
        assert _sql(session, now) == _python(session, now)
    assert len(calls) == 2 and calls[0] == calls[1]


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_pages_follow_code_point_order(pg: sessionmaker[Session], limit: int) -> None:
    projects = ["Z", "a", "é", "ä", "zz", "日本", "🙂", "p1"]
    seed(pg, [event("compute.instance.create.end", f"i-{n}", "2026-10-02T00:00:00Z",
                    project_id=project, state="active", size=SMALL)
              for n, project in enumerate(projects)])
    now = dt.datetime(2026, 12, 15)
    start, end = periods.parse("2026-10")
    with pg() as session:
        timeline = versions.timeline(session, "c1")
        after, seen = None, []
        while True:
            page = sql_rating.project_subtotals(session, "c1", timeline, start, end, now,
                                                after, limit)
            assert page == statements.python_subtotals(session, "c1", timeline, start, end,
                                                       now, after, limit)
            if not page:
                break
            seen += list(page)
            after = list(page)[-1]
    assert seen == sorted(projects)


def test_only_the_kinds_of_projects_with_terms_that_occur_are_priced(
        pg: sessionmaker[Session]) -> None:
    many = {f"p-{n:04d}": [{"discount_percent": "3"}] for n in range(3000)}
    many["p1"] = [{"discount_percent": "40", "from": "2026-10-10T00:00:00Z"}]
    with pg() as session:
        versions.add(session, "c1", {
            "effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
            "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.020"}}},
            "project_terms": many}, "test", dt.datetime(2026, 12, 1))
        session.commit()
    seed(pg, october())
    now = dt.datetime(2026, 12, 15)
    with pg() as session:
        start, end = periods.parse("2026-10")
        ranges = kinds.ranges(versions.timeline(session, "c1"), start, end)
        priced = kinds.price(sql_rating.distinct_kinds(
            session, {"cloud": "c1", "pstart": start, "cap": end}, ranges), ranges)
        # p1's kinds apart where its term is in force, nobody else's (3000 projects with
        # terms and no usage price nothing)
        assert {k.project for k in priced} == {"", "p1"}
        assert len(priced) < 20
        python = _python(session, now)
        assert python == _sql(session, now)
    # inst-a (10-02) before p1's term: 24 h x 0.020 = 0.48 in two lines (0.20 + 0.28, no
    # state modifier here); vol-a unrated (no volume rates); inst-b from 10-15 to 10-17
    # at 40 % off: 48 h x 0.020 x 0.60 = 0.576 -> 0.58
    assert python["p1"] == (Decimal("1.06"), 1)


def _volume(rid: str, start: str, end: str, **size: Any) -> list[dict[str, Any]]:
    return [event("volume.create.end", rid, start, resource_type="volume", state="available",
                  size={"size_gb": 10, **size}),
            event("volume.delete.end", rid, end, resource_type="volume", project_id="")]


def test_volume_types_own_rates_agree(pg: sessionmaker[Session]) -> None:
    rates = {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.020"}}}
    bulk = {"mode": "volume", "tiers": [{"up_to": "500", "rate": "0.00005"},
                                        {"up_to": None, "rate": "0.00002"}]}
    ssd = {"mode": "graduated", "tiers": [{"up_to": "100", "rate": "0.0004"},
                                          {"up_to": None, "rate": "0.0001"}]}
    with pg() as session:
        # c1's own list: default/… never prices it.  c1/1 rates the volume types it
        # names only; c1/2 from the 16th every type, ssd by its own tiers, lvm x 2
        versions.add(session, "c1", {
            "effective_from": "2026-10-01T00:00:00Z", "currency": "EUR", "rates": {
                **rates, "volume": {"per": "gb_hour", "by_volume_type": {
                    "ssd": "0.00035", "bulk": bulk}}}}, "test", dt.datetime(2026, 12, 1))
        versions.add(session, "c1", {
            "effective_from": "2026-10-16T00:00:00Z", "currency": "EUR", "rates": {
                **rates, "volume": {"per": "gb_hour", "rate": "0.0001",
                                    "type_modifiers": {"lvm": "2"},
                                    "by_volume_type": {"ssd": ssd}}}},
            "test", dt.datetime(2026, 12, 1))
        session.commit()
    seed(pg, [*_volume("vs", "2026-10-02T00:00:00Z", "2026-10-02T10:00:00Z", type="ssd"),
              *_volume("vb", "2026-10-03T00:00:00Z", "2026-10-03T10:00:00Z", type="bulk",
                       size_gb=100),
              *_volume("vl", "2026-10-04T00:00:00Z", "2026-10-04T10:00:00Z", type="lvm"),
              *_volume("vx", "2026-10-15T20:00:00Z", "2026-10-16T04:00:00Z", type="ssd"),
              *_volume("vm", "2026-10-17T00:00:00Z", "2026-10-17T10:00:00Z", type="lvm")])
    with pg() as session:
        for now in (dt.datetime(2026, 12, 15), dt.datetime(2026, 10, 16, 2)):
            assert _python(session, now) == _sql(session, now)
        # vs 100 GB-h x 0.00035 = 0.035 -> 0.04; vb 1000 GB-h at bulk's first tier
        # 0.00005 = 0.05; vl unrated under c1/1 (no rate for lvm); vx 40 GB-h x 0.00035 =
        # 0.014 -> 0.01 under c1/1 and 40 x 0.0004 = 0.016 -> 0.02 under c1/2; vm 100 x
        # 0.0001 x 2 = 0.02: 0.14, one unrated line
        assert _sql(session, dt.datetime(2026, 12, 15))["p1"] == (Decimal("0.14"), 1)


# Account a's rates in default/1 from the 3rd to the 15th (instances, volumes, shares),
# account b's instances in default/2 from its start on; p1 in a from September, moved
# to b at 06:00 on the 14th, p2 in a from the 9th (p-free in none).
_ACCOUNT_TERMS = [
    {"a": [{"from": "2026-10-03T00:00:00Z", "until": "2026-10-15T00:00:00Z", "rates": {
        "instance": {"per": "hour", "by_flavor": {"m1.small": "0.011"},
                     "by_resources": {"vcpus": "0.021"}},
        "volume": {"per": "gb_hour", "rate": "0.00031"},
        "share": {"per": "size_gb_hour", "size": "size_gb", "rate": "0.00002"}}}]},
    {"b": [{"rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.027"}}}}]},
]
_MOVES = [("a", "p1", "2026-09-01T00:00:00Z"), ("b", "p1", "2026-10-14T06:00:00Z"),
          ("a", "p2", "2026-10-09T00:00:00Z")]


@pytest.fixture
def pg_accounts(pg_migrated_database: str) -> Any:
    engine = db_engine.make_engine(pg_migrated_database)
    factory = db_engine.make_sessionmaker(engine)
    with factory() as session:
        register_share(session)
        for name in ("a", "b"):
            accounts.add(session, {"account_id": name}, "test", dt.datetime(2026, 12, 1))
        for document, terms in zip(SIZED_PRICES, _ACCOUNT_TERMS, strict=True):
            versions.add(session, "default", {**document, "account_terms": terms}, "test",
                         dt.datetime(2026, 12, 1))
        for name, project, at in _MOVES:
            accounts.add_membership(session, name, {"cloud": "c1", "project_id": project,
                                                    "effective_from": at},
                                    "test", dt.datetime(2026, 12, 1))
        session.commit()
    yield factory
    engine.dispose()


def test_account_terms_agree(pg_accounts: sessionmaker[Session]) -> None:
    seed(pg_accounts, october())
    with pg_accounts() as session:
        # inst-a (10-02, before a's term): 10 h x 0.020 + 14 h x 0.020 x 0.5 = 0.34;
        # vol-a (10-03, a's own volume rate, no ssd modifier: a's entry names none):
        # 2400 GB-h x 0.00031 = 0.744 -> 0.74; inst-b from 10-15 (in b): 24 h x 0.020 =
        # 0.48 under default/1 (b has no terms there), 24 h x b's 0.027 = 0.648 -> 0.65
        # under default/2: 2.21 by the 17th
        found = _sql(session, dt.datetime(2026, 10, 17))
        assert {p: s for p, (s, _u) in found.items()} == {
            "p1": Decimal("2.21"), "p-free": Decimal("0.00")}
        assert found == _python(session, dt.datetime(2026, 10, 17))
    seed(pg_accounts, EXTRAS)
    with pg_accounts() as session:
        start, end = periods.parse("2026-10")
        ranges = kinds.ranges(versions.timeline(session, "c1"), start, end)
        priced = kinds.price(sql_rating.distinct_kinds(
            session, {"cloud": "c1", "pstart": start, "cap": end}, ranges), ranges)
        # the members' kinds priced at their accounts' rates where they apply
        assert {(k.project, k.price.rate) for k in priced if k.resource_type == "instance"
                and k.size and k.size.get("flavor") == "m1.small"} >= {
            ("p1", Decimal("0.011")), ("p1", Decimal("0.027")), ("", Decimal("0.020"))}
        for now in (dt.datetime(2026, 12, 15), dt.datetime(2026, 10, 14, 7),
                    dt.datetime(2026, 10, 1, 0, 0, 0, 1)):
            assert _python(session, now) == _sql(session, now)
            _project_lines_agree(session, now)


def test_random_histories_with_account_terms_agree(pg_accounts: sessionmaker[Session]) -> None:
    _random_histories_agree(pg_accounts, 25,
                            (dt.datetime(2026, 12, 15), dt.datetime(2026, 10, 14, 7)))


def test_many_members_of_an_account_with_terms_are_bound_as_arrays(
        pg: sessionmaker[Session]) -> None:
    # 3200 projects booked into one account with terms, a version cut in 11 pieces by
    # another project's terms: 35200 (piece, project) pairs with terms, more than one
    # statement's 65535 bound parameters would hold two apiece
    cuts = [f"2026-10-{day:02d}T00:00:00Z" for day in range(2, 13)]
    with pg() as session:
        accounts.add(session, {"account_id": "big"}, "test", dt.datetime(2026, 12, 1))
        session.execute(sa.insert(AccountMembership), [
            {"cloud": "c1", "project_id": f"m-{n:04d}", "number": 1, "account_id": "big",
             "effective_from": dt.datetime(2026, 9, 1), "created_at": dt.datetime(2026, 9, 1),
             "created_by": "test"} for n in range(3200)] + [
            {"cloud": "c1", "project_id": "p1", "number": 1, "account_id": "big",
             "effective_from": dt.datetime(2026, 9, 1), "created_at": dt.datetime(2026, 9, 1),
             "created_by": "test"}])
        versions.add(session, "c1", {
            "effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
            "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.020"}}},
            "project_terms": {"px": [{"from": start, "until": until, "discount_percent": "1"}
                                     for start, until in zip(cuts, cuts[1:], strict=False)]},
            "account_terms": {"big": [{"rates": {"instance": {
                "per": "hour", "by_flavor": {"m1.small": "0.010"}}}}]}},
            "test", dt.datetime(2026, 12, 1))
        session.commit()
    seed(pg, october())
    now = dt.datetime(2026, 12, 15)
    with pg() as session:
        python = _python(session, now)
        assert python == _sql(session, now)
        assert _project_lines_agree(session, now)
    # p1 (in big): inst-a 24 h x 0.010 = 0.24 in lines cut at px's dates (0.10 + 0.14
    # shut off at full rate: no state modifier here); vol-a unrated; inst-b 48 h x 0.010
    # = 0.48
    assert python["p1"] == (Decimal("0.72"), 1)


def test_tier_lines_summed_set_based_are_the_pure_ratings(pg_migrated_database: str) -> None:
    """The tier groups the summaries' query (``project_totals``) and the close's
    (``sql_close.freeze``) sum set-based give the tier lines of the lines the pure
    rating rates, for drawn histories and tiers (the volumes' GB-hours, a volume type's
    own, m1.small's hours; p1's own instance rates and discounts cut the versions), at
    any *now*, for a page's projects and with a close's places."""
    engine = db_engine.make_engine(pg_migrated_database)
    factory = db_engine.make_sessionmaker(engine)
    start, end = periods.parse("2026-10")
    priced: list[int] = []

    # derandomize: the same drawn examples every run, so the check below that some had
    # a tier line (what the comparison is for) cannot fail on an unlucky seed (once in a
    # full run, 2026-12-06); the random histories of the other tests keep exploring.
    @given(history=histories(), data=st.data())
    @settings(max_examples=40, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def run(history: list[dict[str, Any]], data: st.DataObject) -> None:
        volume = _tiers(data, "volume", [30, 300, 3000, 30000], ["0.00010", "0.00004", "0"])
        typed = _volume_types(data)
        flavor = _tiers(data, "m1.small", [10, 100, 1000], ["0.020", "0.010", "0.030"])
        with factory() as session:
            empty_history(session, "price_list_versions")
            register_share(session)
            for document in SIZED_PRICES:
                versions.add(session, "default", _flavor_tiered(_volume_typed(
                    _tiered(document, "volume", volume), typed), flavor), "test",
                    dt.datetime(2026, 12, 1))
            session.commit()
        seed(factory, history)
        with factory() as session:
            timeline = versions.timeline(session, "c1")
            for now in (dt.datetime(2026, 12, 15), dt.datetime(2026, 10, 20, 7)):
                # the summaries' query sums the groups of its page's projects with the
                # subtotals
                for after, limit in ((None, None), ("p1", None), (None, 1)):
                    subtotals, sums = sql_rating.project_totals(
                        session, "c1", timeline, start, end, now, after, limit)
                    assert subtotals == sql_rating.project_subtotals(
                        session, "c1", timeline, start, end, now, after, limit)
                    listed = sorted(subtotals)
                    found = tiers.from_sums(sums, timeline)
                    expected = [] if not listed else statements.tier_lines(
                        session, "c1", timeline, start, end, now,
                        projects=(listed[0], listed[-1]))
                    assert found == expected
                    assert [t.as_dict() for t in found] == [t.as_dict() for t in expected]
                    priced.append(len(found))
                # and one project's lines, with its tier lines, as its statement rates them
                _project_lines_agree(session, now)
                # some projects alone (the pending tier adjustments' projects): theirs
                everyone, every_sum = sql_rating.project_totals(session, "c1", timeline, start,
                                                                end, now)
                for chosen in (["p1"], ["p2", "p-free"], []):
                    some, some_sums = sql_rating.project_totals(
                        session, "c1", timeline, start, end, now, projects=chosen)
                    assert some == {p: v for p, v in everyone.items() if p in chosen}
                    assert some_sums == {k: v for k, v in every_sum.items() if k[0] in chosen}
            # the close sums them from the lines it freezes, in the places it was given
            # (rolled back here)
            totals, sums = sql_close.freeze(session, "c1", "2026-10", timeline)
            assert totals == sql_rating.project_subtotals(session, "c1", timeline, start, end,
                                                          dt.datetime(2026, 12, 15))
            assert tiers.from_sums(sums, timeline, 0) == statements.tier_lines(
                session, "c1", timeline, start, end, dt.datetime(2026, 12, 15), 0)
            session.rollback()

    try:
        run()
    finally:
        engine.dispose()
    assert any(priced), "no drawn example had a tier line"
