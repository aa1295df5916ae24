"""assets stage of the EDAQA pipeline."""
