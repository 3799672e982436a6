"""The simulation engine: the world model, tracked state, faults, episodes, the store, MCP over stdio.

The public names are listed in `__init__.pyi` and load on first use, so that a command that needs a few of
them does not import the rest.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
