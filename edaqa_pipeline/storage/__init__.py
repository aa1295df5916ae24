"""storage stage of the EDAQA pipeline."""
