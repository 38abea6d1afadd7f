"""What the node needs to report: throttled warnings, NumPy errors, Python logging to ROS."""
import logging
import math
import time

import numpy as np


class ThrottledWarnings:
    """Warn at most once per ``period`` seconds per key, counting what was suppressed."""

    def __init__(self, logger, period=1.0):
        self._logger = logger
        self._period = period
        self._state = {}

    def warn(self, key, text):
        """Log ``text`` as a warning unless one of ``key`` went out within the period."""
        now = time.monotonic()
        last, suppressed = self._state.get(key, (-math.inf, 0))
        if now - last < self._period:
            self._state[key] = (last, suppressed + 1)
            return
        if suppressed:
            text += f' ({suppressed} more since the last warning of this kind)'
        self._logger.warning(text)
        self._state[key] = (now, 0)

    def floating_point(self, errors: 'FloatingPointErrors', doing: str):
        """Warn of the floating-point errors ``errors`` collected while ``doing``."""
        kinds = errors.take()
        if kinds:
            self.warn('floating_point', f'floating-point {", ".join(kinds)} while {doing}')


class FloatingPointErrors:
    """Collect NumPy floating-point errors (``np.errstate(all='call')``) instead of warning."""

    def __init__(self):
        self.kinds = set()

    def __call__(self, kind, flag):
        """Record one error of ``kind`` (NumPy's ``np.errstate`` callback)."""
        self.kinds.add(kind)

    def context(self):
        """Return an ``np.errstate`` that reports here (NumPy keeps it per thread)."""
        return np.errstate(all='call', call=self)

    def take(self):
        """Return the sorted kinds seen since the last call and forget them."""
        kinds, self.kinds = sorted(self.kinds), set()
        return kinds


class RosLogHandler(logging.Handler):
    """Forward Python ``logging`` records to a ROS logger."""

    def __init__(self, ros_logger):
        super().__init__()
        self._ros_logger = ros_logger

    def emit(self, record):
        """Log the record at the matching ROS severity."""
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            self._ros_logger.error(message)
        elif record.levelno >= logging.WARNING:
            self._ros_logger.warning(message)
        else:
            self._ros_logger.info(message)


__all__ = ['FloatingPointErrors', 'RosLogHandler', 'ThrottledWarnings']
