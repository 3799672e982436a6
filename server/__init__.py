"""The world model, tracked state, faults, episodes, the store, MCP over stdio and the hosted app."""
