"""Run analysis: one table row per run, metric curves per setting, and the notes that say what each main tag is for.

`<package> collect` builds the table (CSV, parquet or stdout), `<package> plot METRIC` draws a metric against the
step, `<package> tags` lists the main tags with their run counts and notes (configs/tags.yaml).
"""
