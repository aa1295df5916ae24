"""evaluation stage of the EDAQA pipeline."""
