"""Attention itself: grouped-query attention (gqa), masks, tokens, attention sources, whole maps and long pooled maps."""
