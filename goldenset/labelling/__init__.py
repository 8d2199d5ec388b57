"""The labelling loop (contract section 7): the rubric, and agreement between annotators.

`goldenset.labelling.rubric` reads and checks the rubric file (7.1) and the rubric-dependent
rules of a label line (7.2); `goldenset.labelling.agreement` computes Cohen's kappa between
annotators and against the agent (7.5). Both are pure library code: no SQL, no Dagster.
"""
