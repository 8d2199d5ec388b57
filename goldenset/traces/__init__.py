"""Traces in: OpenInference and OpenTelemetry GenAI retrieval spans as serve and verdict lines.

`spans` reads the two input formats (and trace and span ids in hex or base64), `mapping`
holds the team's choices (project attribute, version key, labels to verdicts), `convert`
turns one span or annotation into contract lines, and `importer` writes them under LOGS and
quarantines the rest. `otlp`, `spool` and `receiver` are `goldenset traces serve`, which
takes spans over OTLP/HTTP and writes what the import writes; `pipeline` is what the
pipeline's `trace_export` asset imports. The rules are contract section 14.
"""
