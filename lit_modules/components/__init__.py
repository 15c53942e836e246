"""Your own component: plugins imported by path or module (``plugins.py``) and the conformance
kit that checks one against the contracts the built-ins keep (``conformance.py``). May import
``lit_modules.model`` and ``lit_modules.systems``."""
