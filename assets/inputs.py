"""The raw inputs as external assets: what the pipeline reads but does not make.

They carry no code: declaring them (`AssetSpec`, not the deprecated `SourceAsset`) puts
the log folder, the corpus file, the label folder and the rubric in the lineage graph,
upstream of the assets that read them, so a person sees what the corpus sensor watches
and what the labelling page writes into.
"""

import dagster as dg

serve_log_files = dg.AssetSpec(
    "serve_log_files",
    group_name="inputs",
    kinds={"file"},
    description="The RAG service's log folder (GOLDENSET_LOGS): dt=YYYY-MM-DD folders of JSON-lines "
    "serve and verdict files, written by the service, read by serve_log.",
)
corpus_file = dg.AssetSpec(
    "corpus_file",
    group_name="inputs",
    kinds={"file"},
    description="The corpus file (GOLDENSET_CORPUS): one document a line, what the index holds; "
    "watched by corpus_reindex_sensor, read by corpus_snapshot.",
)
label_files = dg.AssetSpec(
    "label_files",
    group_name="inputs",
    kinds={"file"},
    description="The LABELS folder (GOLDENSET_LABELS): dt=YYYY-MM-DD folders of label lines, written by "
    "the labelling page, `goldenset labels` imports and judges, read by human_labels.",
)
rubric_file = dg.AssetSpec(
    "rubric_file",
    group_name="inputs",
    kinds={"file", "yaml"},
    description="The rubric (GOLDENSET_RUBRIC): the pass/fail tests and the rule that turns them into a "
    "label; every label line is checked against it.",
)

INPUTS = [serve_log_files, corpus_file, label_files, rubric_file]
