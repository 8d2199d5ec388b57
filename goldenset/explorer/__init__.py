"""The set explorer (contract 15.2): the golden set, its builds and benchmark runs, read-only, in the page app.

`data` holds every query the pages read (SQL lives there), `plot` draws the comparison's
per-query differences as SVG on the server, `routes` makes the Starlette routes that
`goldenset label serve` mounts beside the labelling page (same host rules; the explorer only
reads, so it has no form and needs no form token; with `--team` it sits behind the team's
name form, as every team page does). The query page shows `goldenset.explain`'s data.
"""
