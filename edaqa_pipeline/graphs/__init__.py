"""graphs stage of the EDAQA pipeline."""
