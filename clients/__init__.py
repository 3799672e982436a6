"""Reference agent, batch runner, metrics, reports, export and the `occusim` command line."""
