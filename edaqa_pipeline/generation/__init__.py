"""generation stage of the EDAQA pipeline."""
