"""Adapters: everything that speaks to something that is not ours.

``assay.adapters.runners`` holds the runners (one module per runner or vendor); importing it registers
them with :func:`assay.core.runner.register`. This package itself imports nothing, so importing one
adapter never drags in another's dependencies.
"""

__all__: list[str] = []
