"""The corpus folder: which files are documents, their keys and content hashes."""
