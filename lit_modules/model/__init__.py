"""The encoder classifier's math: ``ModelConfig``, the component registry, the built-in
components and ``EncoderClassifier``. Imports ``errors`` and ``files`` only: no Lightning."""
