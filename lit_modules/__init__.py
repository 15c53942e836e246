"""The model and the LightningModule, in rooms by job. Each room may import the rooms before it
in this order (and ``errors``, ``files``), never one after:

1. ``model``: the encoder's math and the built-in components (positional, attention, norm, FFN),
   the registry they and a user's components register in, and ``ModelConfig``;
2. ``systems``: the Lightning systems (``LitClassifier``, the seed-parallel stack), callbacks
   (the attention archive), the numerics seed factor;
3. ``components``: a user's own component: plugins imported by path, and the conformance kit
   that checks a component against the contracts the built-ins keep.

tests/unit/test_layers.py holds this order.
"""
