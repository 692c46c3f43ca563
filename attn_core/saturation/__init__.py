"""Softmax saturation without 1/sqrt(d_k): what a sample of q and k depends on and how it is drawn (sampling), per-row
statistics that need no sampling (measures), the sweep against d_k and what reads it (sweep), and the first
sequence's scores and maps for the page's example views (examples)."""
