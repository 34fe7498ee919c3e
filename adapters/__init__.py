"""Adapters: everything that speaks to something that is not ours.

``assay.adapters.runners`` holds the built-in runners (one module per runner or vendor), registered as
entry points in the ``assay.runners`` group like any plug-in. This package itself imports nothing, so importing one
adapter never drags in another's dependencies.
"""

__all__: list[str] = []
