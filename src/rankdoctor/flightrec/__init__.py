"""PyTorch Flight Recorder dumps: safe loading and cross-rank analysis."""
