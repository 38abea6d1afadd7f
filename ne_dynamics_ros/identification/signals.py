"""The recording's signals for identification: filtered, differentiated, aligned, decimated.

Pure module (no ROS; SciPy's ``signal`` for the filters). Used by
:mod:`ne_dynamics_ros.identification.estimation`, step 1 (*filter*: :func:`filtered_states`,
:func:`aligned_efforts`) and step 2 (*decimate*: :func:`decimation_filter`,
:func:`decimation_index`). All arrays are (N, n): N samples of n joints, SI units.
"""
import numpy as np

from ne_dynamics_ros.errors import require


def scipy_signal():
    """Return scipy.signal, or raise a one-line error naming the pip extra."""
    return require('scipy.signal', 'identification (ne-dynamics identify)')


def lowpass(x, cutoff, rate):
    """Zero-phase low-pass of the (N, n) ``x`` along time, one column at a time.

    Column by column, so that the filter's temporaries are (N,) and not (N, n).
    """
    butter, sosfiltfilt = scipy_signal().butter, scipy_signal().sosfiltfilt
    sos = butter(4, cutoff, fs=rate, output='sos')
    out = np.empty(x.shape)
    for j in range(x.shape[1]):
        out[:, j] = sosfiltfilt(sos, x[:, j])
    return out


def gradient(x, t):
    """Central differences of the (N, n) ``x`` over the times ``t``, one column at a time."""
    out = np.empty(x.shape)
    for j in range(x.shape[1]):
        out[:, j] = np.gradient(x[:, j], t)
    return out


def mean_square(x):
    """Return the (n,) mean of the squares of the (N, n) ``x`` without an (N, n) temporary."""
    return np.einsum('ij,ij->j', x, x) / max(1, x.shape[0])


def filtered_states(recording, cutoff):
    """Zero-phase filtered q, q̇ and differentiated q̈: three (N, n) arrays."""
    rate = recording.rate
    q = lowpass(recording.q, cutoff, rate)
    if recording.qd is not None:
        qd = lowpass(recording.qd, cutoff, rate)
    else:
        qd = gradient(q, recording.t)
    qdd = gradient(qd, recording.t)
    return q, qd, qdd


def aligned_efforts(recording, effort_delay):
    """Return the recorded efforts at the states' times: (N, n), taken at ``t + effort_delay``."""
    tau = recording.effort
    if effort_delay:
        shifted = recording.t + float(effort_delay)
        out = np.empty(tau.shape)
        for j in range(tau.shape[1]):
            out[:, j] = np.interp(shifted, recording.t, tau[:, j])
        tau = out
    return tau


def decimation_filter(cutoff, rate, r):
    """Return the parallel-decimation low-pass (second-order sections), or None if r == 1."""
    if r <= 1:
        return None
    return scipy_signal().butter(4, min(cutoff, 0.8 * rate / (2 * r)), fs=rate, output='sos')


def decimation_index(N, r):
    """Return the kept sample indices: every r-th, away from the filter start-up at both ends."""
    edge = max(1, int(0.02 * N))
    return np.arange(edge, N - edge, r)


def position_noise(q, cutoff, rate):
    """Return each joint's position noise σ_q (n,), rad (m): what the low-pass takes away.

    ``q`` (N, n) as recorded; ``cutoff``, ``rate`` Hz. The residual ``q - lowpass(q)``
    away from both ends (the filter's start-up, as :func:`decimation_index`), its spread
    taken robustly (1.4826 times the median absolute deviation: a glitch or a fast
    transient does not count as noise). The motion of an excitation lies well below the
    cutoff; white noise loses only ``2 cutoff / rate`` of its power to the low-pass.
    """
    residual = (q - lowpass(q, cutoff, rate))[decimation_index(q.shape[0], 1)]
    deviation = np.abs(residual - np.median(residual, axis=0))
    return 1.4826 * np.median(deviation, axis=0)


__all__ = ['aligned_efforts', 'decimation_filter', 'decimation_index', 'filtered_states',
           'gradient', 'lowpass', 'mean_square', 'position_noise', 'scipy_signal']
