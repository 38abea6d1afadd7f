"""Command-line entry points: ``ne-dynamics`` (:mod:`.cli`), ``ne-dynamics-demo`` (:mod:`.demo`).

They may import ROS (the demo runs the nodes); :mod:`.cli` needs only the dynamics core.
"""
