"""The clients that drive episodes: the reference agent, MCP connections, the batch runner, the `occusim` CLI.

The public names are listed in `__init__.pyi` and load on first use, so that the command line (which
lives in this package) starts fast.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
