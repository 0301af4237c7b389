"""Models: plain `nn.Module`s, one per file, each built from a `configs/model/` option."""
