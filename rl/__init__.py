"""occusim tasks inside reinforcement-learning loops: thin adapters over the episode API for Gymnasium,
TRL, verifiers and OpenEnv (each framework's own package is imported only by its adapter, on use)."""
