"""The dsbo surrogate zoo: LightningModules in plain PyTorch + Lightning + einops.

The zoo never imports :mod:`dsbo`, so it stays usable without BoTorch. Model families are
added one file each (see ``../shared/DESIGN.md``).
"""
