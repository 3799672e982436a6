"""The protocols a run or a service can speak, by name, each loaded only when named."""

from __future__ import annotations

import importlib

from occusim.environments import ProtocolName

from ._run_protocol import RunProtocol

# Each protocol's class, as `module:attribute`: a protocol's folder sits above the clients that name it
# (it builds on their agent), so it is found by name here, as a plug-in would be.
PROTOCOLS: dict[ProtocolName, str] = {
    "native": "occusim.clients._native_protocol:NativeProtocol",
    "occubench": "occusim.occubench:OccubenchProtocol",
}


def load_protocol(name: ProtocolName, sources: list[str]) -> RunProtocol:
    """The protocol `name`, with whatever it reads from the run's `sources` (OccuBench's harness).

    The one place a program turns a protocol's name into its implementation; the protocol's own loading
    errors (HarnessError) propagate.
    """
    module, _, attribute = PROTOCOLS[name].partition(":")
    protocol: RunProtocol = getattr(importlib.import_module(module), attribute).load(sources)
    return protocol
