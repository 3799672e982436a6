"""The hosted service: the episode API, per-episode MCP endpoints, tenants, limits and the viewer for tenants.

The public names are listed in `__init__.pyi` and load on first use, so that a command that needs one of them
(`occusim serve --http`, the in-process HTTP transport) loads only what it uses.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
