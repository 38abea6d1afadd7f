"""The lockstep benchmarks run end to end and print each goal beside its bound.

Their plants are integrated in the benchmark's own process, step by step with the
controller (no DDS participant, no timing judged): parallel-safe.
"""
import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
PARALLEL_SAFE = True


def test_bench_adaptive_prints_each_arm_beside_the_goals():
    """One cycle of each arm and plant: a row of numbers each, the adaptive law's error
    below computed torque's with the load it does not know (without the hidden UR5e's
    identification over DDS, which ``test_demo``'s identified run and bench_safety's
    cover)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run([sys.executable, str(REPO / 'benchmarks' / 'bench_adaptive.py'),
                          '--cycles', '1', '--no-identified'], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.splitlines()
            if line.startswith(('puma560', 'ur5e'))]
    assert [row[:2] for row in rows] == [['puma560', 'pinocchio'], ['puma560', 'mujoco'],
                                         ['ur5e', 'mujoco']]
    for row in rows:
        fixed, learned, settle = float(row[2]), float(row[3]), float(row[6])
        assert learned < fixed and 0 < settle < 1.0


def test_bench_safety_prints_the_torque_goals_and_the_push_beside_their_bounds():
    """Without the identified arm (the push on the plant's own model): the stretch equals
    the brute force to 1e-6, no command at a clamp on either plant, the observer within
    1 % on Pinocchio, contact reported within 50 ms and none before the push."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run([sys.executable, str(REPO / 'benchmarks' / 'bench_safety.py'),
                          '--no-identified'], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert 'reject:  shoulder_lift_joint needs' in text
    difference = float(re.search(r'difference ([0-9.e+-]+) \(goal', text).group(1))
    assert difference <= 1e-6
    plants = [line.split() for line in text.splitlines()
              if line.strip().startswith(('pinocchio ', 'mujoco '))]
    assert [row[0] for row in plants] == ['pinocchio', 'mujoco']
    assert all(row[4] == '0' for row in plants)               # commands at a clamp
    relative = float(re.search(r'at most ([0-9.e+-]+) \(goal <= 1e-2\)', text).group(1))
    assert relative <= 1e-2
    reported = re.search(r'contact reported (\d+) ms after the push began .*; (\d+) before',
                         text)
    assert int(reported.group(1)) <= 50 and reported.group(2) == '0'


def test_bench_cartesian_prints_each_goal_beside_its_bound():
    """--quick on the exact plant: Hooke's law to 1 % along x, y, z (the stiffness set, and
    the one sized for the arm when unset), the picked load
    carried when learned or declared and not when fixed, a step within 2 mm, hostile
    targets refused, the Panda's posture moved with < 1 mm of tip motion."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run([sys.executable, str(REPO / 'benchmarks' / 'bench_cartesian.py'),
                          '--quick'], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    along = [float(v) for v in re.findall(r'along +([0-9.]+) mm vs F/K', text)]
    # x, y, z at the set stiffness (F/K 40 mm), then at the one sized for the arm
    assert len(along) == 6 and all(abs(a - 40.0) < 0.4 for a in along[:3]), along
    off = [float(v) for v in re.findall(r'vs F/K +[0-9.]+ mm \( *([-+][0-9.]+) %', text)]
    assert len(off) == 6 and all(abs(v) <= 1.0 for v in off), off    # printed to 0.1 %
    sized = re.search(r'unset \(sized for the arm: \[([^]]+)\]\)', text)
    assert sized and all(float(k) > 0 for k in sized.group(1).split(',')), text[:2000]
    sags = dict(re.findall(r'exact plant +(\w+) +sag +([0-9.]+) mm', text))
    assert float(sags['fixed']) > 30 and float(sags['adaptive']) < 2 and \
        float(sags['declared']) < 1, sags
    assert 'refused 4 of 4' in text
    settle = [float(v) for v in re.findall(r': ([0-9.]+) s, overshoot', text)]
    assert settle and max(settle) < 1.5, settle
    tip = float(re.search(r'tip moved ([0-9.]+) mm \(< 1\)', text).group(1))
    assert tip < 1.0
