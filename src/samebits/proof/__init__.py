"""The reproducibility proof: training processes run, stopped, killed and resumed in every way we know, and
compared bit for bit (`<package> proof`, `nox -s reproducibility`; the failpoints those processes obey are
core/failpoints.py), and `<package> reproduce RUN_DIR` for a past run.
"""
