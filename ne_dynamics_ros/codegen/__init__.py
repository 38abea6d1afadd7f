"""Generated robot-specific inverse dynamics (Renaud 1987): a small compiler of its own.

It imports the dynamics core and is never imported by it. Its modules, in the order the
work flows:

* :mod:`~ne_dynamics_ros.codegen.symbols`: the symbols and the emitter the recursion runs
  on;
* :mod:`~ne_dynamics_ros.codegen.tracing`: :func:`generate` runs the model's Newton–Euler
  recursion on them over its base parameters, the program;
* :mod:`~ne_dynamics_ros.codegen.python_emitter`, :mod:`~ne_dynamics_ros.codegen.batch_emitter`
  and :mod:`~ne_dynamics_ros.codegen.c_emitter`: the program as a Python module (single
  call and NumPy batch) or C99 source;
* :mod:`~ne_dynamics_ros.codegen.compiled`: :class:`CompiledDynamics`, a model whose
  ``rnea`` runs the generated Python, checked against the recursion when built;
* :mod:`~ne_dynamics_ros.codegen.payload_step`: Slotine & Li's adaptive step with a load's
  parameters as symbols (the two-rate recursion and the load's ``Yᵀ s``), for
  :mod:`ne_dynamics_ros.control.laws.slotine_li`.
"""
from ne_dynamics_ros.codegen.c_emitter import c_source
from ne_dynamics_ros.codegen.compiled import CompiledDynamics
from ne_dynamics_ros.codegen.python_emitter import count_operations, load_python, python_source
from ne_dynamics_ros.codegen.symbols import Emitter, Symbol
from ne_dynamics_ros.codegen.tracing import (generate, GeneratedDynamics, GRAVITY,
                                             reduced_model)

__all__ = ['c_source', 'CompiledDynamics', 'count_operations', 'Emitter', 'generate',
           'GeneratedDynamics', 'GRAVITY', 'load_python', 'python_source', 'reduced_model',
           'Symbol']
