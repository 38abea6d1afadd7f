"""Package facades that import a name's module only when the name is first used.

A package's ``__init__`` lists what callers import from the package (``from
ne_dynamics_ros import load_model``); importing every module behind those names at once
would make each process pay for all of them, also the ones that need none (the node's
trajectory receiver needs :mod:`ne_dynamics_ros.control.reference.trajectory`, not the controller
nor the dynamics: measured on the 2-core CI machine, 0.37 s of its 0.6 s start-up went to
importing the package's ``__init__`` modules). The facade resolves a name on first
access, per PEP 562 (module ``__getattr__``), and caches it in the package.
"""
import importlib


def lazy_exports(package: str, exports: dict):
    """Return ``(__getattr__, __dir__)`` for a package re-exporting names lazily.

    Args:
        package: the package's ``__name__``.
        exports: ``{name: relative module}``, e.g. ``{'load_model': '.dynamics'}``.

    Raises:
        AttributeError: from the returned ``__getattr__``, for a name not in ``exports``
            (what a missing module attribute raises).
    """
    def __getattr__(name):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f'module {package!r} has no attribute {name!r}')
        value = getattr(importlib.import_module(module, package), name)
        setattr(importlib.import_module(package), name, value)   # later reads skip this
        return value

    def __dir__():
        return sorted(set(exports) | set(vars(importlib.import_module(package))))

    return __getattr__, __dir__
