"""Trained models shipped offline: loading and capturing attention (models), the converted-model store (store)."""
