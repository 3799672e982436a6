"""Run analysis: the run folder's format, metrics with intervals, reports, plots, export and run comparison.

It reads what a run wrote and needs neither MCP nor the server. The public names are listed in `__init__.pyi`
and load on first use, so that the command line starts fast.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
