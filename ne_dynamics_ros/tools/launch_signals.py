"""Ctrl-C in ``ros2 launch`` without a KeyboardInterrupt raised into its run loop.

Pure module (the standard library only). ``ros2 launch`` (launch 3.4.3, Jazzy) learns of
SIGINT through :func:`signal.set_wakeup_fd` and shuts its processes down from its own
handler; the Python-level SIGINT handler stays the default one, so the same Ctrl-C also
raises :class:`KeyboardInterrupt` wherever the launch process's main thread happens to
be. Launch catches it and carries on, but at an unlucky instant it interrupts
``LaunchService.run_async`` so that its event-processing task is lost ("Task was
destroyed but it is pending! ... LaunchService._process_one_event", and "coroutine
'LaunchService._process_one_event' was never awaited" at its ``except
KeyboardInterrupt: continue``). Seen here 2 times in about 90 Ctrl-C's of
a launch whose node had just printed a line (``test/system/test_launch.py``): once
``ros2 launch`` exited 1 after its node had finished cleanly (the message above), once
it did not exit within 20 s (its node's last lines and its own "sending signal" never
printed: its events no longer processed, most likely the same).

:func:`quiet_keyboard_interrupt`, called from a launch file's
``generate_launch_description``, replaces the default SIGINT handler of the launch
process with one that does nothing: the signal still reaches launch's handler through
the wakeup file descriptor (CPython writes it for every signal with a Python handler),
and launch shuts down as designed; no KeyboardInterrupt is raised into the run loop.
Children are unaffected (a handler does not survive ``exec``).
"""
import signal
import threading


def _ignore_keyboard_interrupt(signum, frame):
    """Do nothing: launch's wakeup file descriptor carries the signal."""


def quiet_keyboard_interrupt() -> bool:
    """Replace the default SIGINT handler of this process by a no-op; return if it did.

    Only from the main thread and only over Python's default handler
    (:func:`signal.default_int_handler`): a handler someone else installed, or
    ``SIG_IGN``, is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _ignore_keyboard_interrupt)
    return True


__all__ = ['quiet_keyboard_interrupt']
