"""titan: find, measure and survive transients in LLM training.

Submodules:
  titan.client      step / checkpoint / mark events to the node's `titan agent` (never blocks)
  titan.checkpoint  sharded, asynchronous, incremental, verified checkpoints
"""
from titan._titan import __version__  # noqa: F401  (the version in CMakeLists.txt project())
