"""The machinery every run relies on, maintained by the template (`copier update`): the config's root schema
and checks, checkpoints, RNG and determinism, distributed processes, preemption, provenance, run names,
hashes, durable files, errors, and how batches are drawn. Research code uses it; it never imports research code
except to register the research schemas with Hydra.
"""
