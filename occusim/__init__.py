"""occusim: occupational scenarios served over MCP, simulated by a language world model."""

import os

__version__ = "0.1.0"

# litellm's bundled price map, set before anything can import litellm (a background import, a worker, a served
# subprocess): otherwise each import tries to fetch the map from the internet, printing a warning per attempt
# and taking seconds offline. A value the user set is kept.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
