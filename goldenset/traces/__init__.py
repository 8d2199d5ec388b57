"""Traces in: OpenInference and OpenTelemetry GenAI retrieval spans as serve and verdict lines.

`spans` reads the two input formats, `mapping` holds the team's choices (project
attribute, version key, labels to verdicts), `convert` turns one span or annotation
into contract lines, and `importer` writes them under LOGS and quarantines the rest.
The rules are contract section 14.
"""
