"""occusim: occupational scenarios served over MCP, simulated by a language world model."""

__version__ = "0.1.0"
