"""Import-time notices of libraries Tally does not run, kept off an operator's screen.

oslo.messaging loads oslo.service, whose default backend imports eventlet; eventlet
warns that it is deprecated, and its DNS support imports dnspython, whose DNSSEC
module names cryptography's DSA keys, which cryptography (51 on) reports as
deprecated, four times over.  Tally runs nothing on eventlet and resolves no DNSSEC,
so a command's start would print a dozen lines nobody can act on.  Only these two
notices are filtered, each by its own text (and the DSA one only when raised from
dnspython): any other warning still shows.
"""

from __future__ import annotations

import warnings


def quiet_library_notices() -> None:
    """Filter the two notices above; call before anything imports oslo.messaging."""
    warnings.filterwarnings("ignore", message=r"(?s)\s*Eventlet is deprecated")
    warnings.filterwarnings("ignore", message=r"DSA is deprecated", module=r"dns\.")
