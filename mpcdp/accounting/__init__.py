"""Privacy accounting: events for every mechanism, a certifying accountant, the paper's bound, calibration."""
