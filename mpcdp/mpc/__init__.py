"""Secret-shared values and the protocols mpcdp runs on them (each protocol a function of a context)."""
