"""The engine's runtime: validated settings and errors (config), the device (device), memory budgets and CUDA fallbacks (guard)."""
