"""The node benchmark's soak and stall modes run end to end over DDS (figures are reported,
not asserted); the lockstep benchmarks' smoke runs are in ``test_benchmarks_lockstep``."""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_bench_node_soak_reports_every_window_for_node_and_baseline(domain_id):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run(
        [sys.executable, str(REPO / 'benchmarks' / 'bench_node.py'), '--soak', '2',
         '--window', '1', '--rate', '200', '--domain-id', str(domain_id), '--json',
         '--node-arg', 'discovery_settle:=0.2'],
        env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    for name in ('node', 'baseline'):
        run = result[name]
        assert run['published'] == 400
        assert [w['window'] for w in run['windows']] == [1, 2]
        assert run['rss_start_mib'] > 10 and run['rss_end_mib'] > 10
        # the states were answered (most of them: DDS may lose a few under load)
        assert run['without_reply'] < run['published'] / 2
        assert 0 < run['p50_us'] <= run['p99_us']
        assert run['cpu_us_per_state'] > 0
        # the states just after each trajectory message, and the others, reported apart
        split = run['split']
        assert set(split) == {'after_trajectory', 'other'}
        assert abs(sum(part['share_of_slowest_1pct'] for part in split.values()) - 1) < 1e-9
    assert result['p99_ratio'] > 0


def test_bench_node_stall_run_reports_each_message(domain_id):
    """The stall run, small: a 200-point trajectory, a 500-point one with every field and
    a 0.5 MB message over a 0.2 MB bound; then a 200-point FollowJointTrajectory goal and
    one of 100 001 points; each handled by the node (the valid ones installed, the big
    message dropped unread, the big goal rejected) and each given its gaps (figures
    reported, not asserted)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run(
        [sys.executable, str(REPO / 'benchmarks' / 'bench_node.py'), '--stall', '1',
         '--sizes', '200', '--largest-points', '500', '--oversized-mb', '0.5',
         '--node-arg', 'max_trajectory_bytes:=200000', '--node-arg', 'discovery_settle:=0.2',
         '--pause', '0.6',
         '--domain-id', str(domain_id),
         '--json'], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    rows = result['rows']
    goals = importlib.util.find_spec('control_msgs') is not None
    assert [row['event'] for row in rows] == ['200 points', 'largest', 'oversized'] + (
        ['goal 200 points', 'goal oversized'] if goals else [])
    assert rows[2]['bytes'] > 200_000 > rows[1]['bytes'] > rows[0]['bytes']
    if goals:
        assert rows[3]['bytes'] == rows[0]['bytes'] and rows[4]['bytes'] > 1e6
    for row in rows:
        assert row['handled_s'] is not None, row           # the node logged it
        assert row['gap_ms'] > 0 and row['steady_gap_ms'] > 0 and row['stream_gap_ms'] > 0
    assert result['zero_commands_total'] >= 0 and result['timeouts_logged'] >= 0
