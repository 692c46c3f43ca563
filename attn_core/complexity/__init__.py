"""Cost and complexity of one attention layer: FLOPs and bytes per stage, and their measured times."""
