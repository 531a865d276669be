"""The two library notices a command start filters, and only those."""

from __future__ import annotations

import warnings

from tally_common.library_notices import quiet_library_notices


def _shown(message: str, module: str, category: type[Warning] = UserWarning) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_library_notices()
        warnings.warn_explicit(message, category, filename=f"{module}.py", lineno=1,
                               module=module)
    return [str(item.message) for item in caught]


def test_eventlets_notice_is_filtered() -> None:
    assert _shown("\n  Eventlet is deprecated. It is currently being maintained ...",
                  "oslo_utils.eventletutils", DeprecationWarning) == []


def test_the_dsa_notice_is_filtered_only_from_dnspython() -> None:
    notice = "DSA is deprecated and support will be removed in a future release."
    assert _shown(notice, "dns.dnssecalgs.dsa") == []
    assert _shown(notice, "reporting.somewhere") == [notice]


def test_other_warnings_still_show() -> None:
    assert _shown("something else is deprecated", "dns.dnssecalgs.dsa") == [
        "something else is deprecated"]
