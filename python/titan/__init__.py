"""titan: find, measure and survive transients in LLM training.

Submodules:
  titan.client      step / checkpoint / mark events to the node's `titan agent` (never blocks)
  titan.checkpoint  sharded, asynchronous, incremental, verified checkpoints
"""
__version__ = "0.1.0"
