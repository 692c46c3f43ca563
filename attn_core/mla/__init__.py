"""Multi-head latent attention (DeepSeek-V2/V3): both paths, their caches, live decode and costs."""
