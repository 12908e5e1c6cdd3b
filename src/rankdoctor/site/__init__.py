"""The static encyclopedia: one page per entry, indexes by class and system, the NCCL
error hub, and an offline search — all generated from ``entries/``."""
