"""The measuring configuration: engines, protocols, the vLLM argv and environment they set."""
