"""Keys and values: the KV cache and its live decode (cache), its memory arithmetic and presets (memory), per-layer costs (costs), MHA to GQA/MQA conversion (convert)."""
