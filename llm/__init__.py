"""One gateway to every model: litellm, the local GGUF backend, the response cache, usage accounting."""
