"""Engines that scan on other machines than this one (``rankdoctor diagnose --engine ray``)."""
