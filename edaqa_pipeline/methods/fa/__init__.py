"""The primary paper's function-aware retrieval (paper 000)."""
