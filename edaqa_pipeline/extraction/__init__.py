"""extraction stage of the EDAQA pipeline."""
