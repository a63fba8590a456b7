"""What start-up reads once from the operator's files: every listener's TLS, the API keys.

The settings only name the files (and their checks, base/settings.py, only
see that they exist); here they are read, parsed and matched, once per
server process, before any port opens. A file that does not parse, a key
that does not match its certificate or a bad key file stops start-up
(``platform serve`` exits 2 with one line). What is built is handed to the
server (compose): the front ends and ``ServerContext.ssl_context`` use it,
and SIGHUP or a change of the files re-reads them (frontends/tls.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplatform.base.settings import Settings
from modelplatform.frontends.gate import AccessGate
from modelplatform.frontends.tls import ServerTls


@dataclass(frozen=True, eq=False)
class Security:
    tls: ServerTls
    gate: AccessGate

    @classmethod
    def read(cls, settings: Settings) -> Security:
        """Read every TLS file and the key file now; raises InvalidArgument naming the bad one."""
        return cls(ServerTls.from_settings(settings), AccessGate.from_settings(settings))
