"""``tally`` refuses what cannot be right (a URL without scheme or ending in /v1, a
resource type that does not exist) and shows where an event came from."""

from __future__ import annotations

import pytest

from tallyclient.cli.main import main
from tests.functional.cli.conftest import Api
from tests.functional.cli.test_cli import HISTORY, event, run, table_rows
from tests.functional.reporting.fixtures import TOKENS


@pytest.mark.parametrize(("url", "message"), [
    ("127.0.0.1:8779", "tally: --url (or TALLY_URL) '127.0.0.1:8779' has no http:// or https:// "
                       "scheme: write it as e.g. http://127.0.0.1:8779\n"),
    ("http://127.0.0.1:8779/v1", "tally: --url (or TALLY_URL) 'http://127.0.0.1:8779/v1' must be "
                                 "the API's base URL, without /v1 or /internal (Tally adds "
                                 "them): e.g. http://127.0.0.1:8779\n"),
])
def test_a_wrong_url_is_a_usage_error(url: str, message: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", url, "sync-runs"]) == 2
    assert capsys.readouterr().err == message


def test_an_unknown_resource_type_is_refused(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    assert api.ingest(HISTORY)["stored"] == len(HISTORY)
    code, out, err = run(api, capsys, "inventory", "--type", "instances", role="read")
    assert (code, out) == (2, "")
    assert err.startswith("tally: --type 'instances' is not a resource type the Reporting API "
                          "knows (") and "instance" in err
    code, out, _ = run(api, capsys, "inventory", "--type", "volume", role="read")
    assert code == 0 and len(table_rows(out)) == 1  # a known type with nothing live: empty


def test_a_type_with_history_but_no_schema_still_lists(api: Api,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert api.ingest([event(90, "share.create.end", "sh-1", "2026-01-10T00:00:00Z",
                             resource_type="share", state="available")])["stored"] == 1
    code, out, _ = run(api, capsys, "inventory", "--type", "share", role="read")
    assert code == 0 and "sh-1" in out


def test_history_shows_the_openstack_event_type(api: Api,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    created = event(91, "compute.instance.create.end", "inst-x", "2026-01-10T00:00:00Z",
                    state="active", provider={"oslo_event_type": "instance.create.end"})
    assert api.ingest([created])["stored"] == 1
    assert main(["--url", api.url, "--token", TOKENS["read"], "history", "c1", "instance",
                 "inst-x"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows[0][-1] == "openstack_event_type"
    assert rows[1][-1] == "instance.create.end"
