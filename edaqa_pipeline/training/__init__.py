"""training stage of the EDAQA pipeline."""
