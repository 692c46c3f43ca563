"""Attention as convolution: quadratic relative-position heads that reproduce a convolution kernel."""
