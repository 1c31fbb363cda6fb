"""Kubernetes' own rules, shared by validation and the SDK adapters: names, quantities, mount paths, client models."""
