"""parsing stage of the EDAQA pipeline."""
