"""The REST layer both HTTP services share: one error body, its handlers, the body size and JSON limits, app
assembly.

The public names are listed in `__init__.pyi` and load on first use, so that a client that needs only the
wire shapes does not import the web framework.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
