"""Softmax saturation without 1/sqrt(d_k): sampled scores and their statistics."""
