"""quiet_keyboard_interrupt (tools/launch_signals.py), in a process of its own.

The reference is CPython's signal machinery: with the default handler a SIGINT raises
KeyboardInterrupt; after the call it does not, while the wakeup file descriptor (what
``ros2 launch`` listens to) still receives the signal's number; a handler someone else
installed and a call from another thread are left alone.
"""
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent('''
    import os, signal, socket, sys, threading, time
    from ne_dynamics_ros.tools.launch_signals import quiet_keyboard_interrupt
    case = sys.argv[1]
    # Python's own SIGINT handler, as in a process started with SIGINT not ignored (a
    # shell's background job starts with it ignored, and Python then keeps SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    read, write = socket.socketpair()
    write.setblocking(False)
    signal.set_wakeup_fd(write.fileno())
    if case == 'thread':
        done = []
        worker = threading.Thread(target=lambda: done.append(quiet_keyboard_interrupt()))
        worker.start()
        worker.join()
        print('changed', done[0])
    elif case == 'other':
        signal.signal(signal.SIGINT, lambda *a: print('own handler'))
        print('changed', quiet_keyboard_interrupt())
    else:
        print('changed', quiet_keyboard_interrupt())
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        print('no KeyboardInterrupt')
    except KeyboardInterrupt:
        print('KeyboardInterrupt')
    print('wakeup', list(read.recv(16)))
''')


def run(case):
    done = subprocess.run([sys.executable, '-c', CHILD, case], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split('\n')


def test_a_sigint_reaches_the_wakeup_fd_and_raises_nothing():
    out = run('main')
    assert out[:3] == ['changed True', 'no KeyboardInterrupt', 'wakeup [2]']


def test_without_it_python_raises_keyboard_interrupt_and_other_handlers_stay():
    out = run('thread')                       # not the main thread: nothing changed
    assert out[:3] == ['changed False', 'KeyboardInterrupt', 'wakeup [2]']
    out = run('other')                        # someone's own handler: kept, it runs
    assert out[:4] == ['changed False', 'own handler', 'no KeyboardInterrupt', 'wakeup [2]']
