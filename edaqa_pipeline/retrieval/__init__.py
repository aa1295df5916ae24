"""retrieval stage of the EDAQA pipeline."""
