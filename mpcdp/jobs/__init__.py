"""Party functions: what every data party runs, registered by name for the CLI and the launchers."""
