"""Noise for differential privacy: sampled inside the MPC, distributed, or simulated."""
