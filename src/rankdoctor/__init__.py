"""rankdoctor: find the rank that started a distributed-training failure, and say why."""

__version__ = "0.1.0"
