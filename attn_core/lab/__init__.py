"""The training lab: small attention models trained on toy tasks, converted and probed."""
