"""Models, per-example gradients and clipping for the private training algorithms."""
