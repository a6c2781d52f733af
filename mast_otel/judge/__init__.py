"""The MAST judge: turns one conversation's spans into failure-mode labels (see ``model`` for the contract)."""
