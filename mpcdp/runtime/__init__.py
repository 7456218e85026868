"""Starting parties: one harness for local processes, one entry point for separate hosts."""
