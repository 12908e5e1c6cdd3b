"""Renderers of one Diagnosis model: text (Rich), JSON, Markdown."""
