"""The local web app (``rankdoctor serve``): diagnose pasted or dropped logs, read the
report and its per-rank timeline, browse the encyclopedia. Nothing comes from the network."""
