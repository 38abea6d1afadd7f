"""The output writer every command-line tool (and the demo) uses.

Rules, checked before any work is done (:func:`check_outputs`), so that a refused output
costs nothing and loses nothing:

* an output that exists must be a regular file (a device, a FIFO, a folder or a socket
  is refused: ``--output /dev/null`` would otherwise replace the device node by a file);
  a symbolic link to a regular file is followed, and the file it points to is written;
* an output must not be one of the command's inputs (the same file, also through links
  or another hard link), nor the same file as another output;
* the folder it goes into must exist.

Writing (:func:`write_outputs`) is atomic and all-or-nothing: every file is written to a
temporary file in its target's folder, then all are renamed over their targets; on any
error the temporary files go and the targets are as they were. A new file gets the
permissions the umask gives (0644 under the usual 022), a replaced file keeps its own.
Every error names the path, disk full included.
"""
import errno
import os
import pathlib
import stat
import tempfile


class OutputError(OSError):
    """An output cannot be written, or must not be: the message names the path and why."""


def _real(path):
    return pathlib.Path(os.path.realpath(os.fspath(path)))


def _same(a, b):
    """Tell whether ``a`` and ``b`` name the same file (links and hard links included)."""
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(outputs, inputs=()):
    """Refuse outputs that must not be written; return their real paths, in order.

    Args:
        outputs: sequence of (label for messages, e.g. ``'--output-urdf'``, path).
        inputs: paths the command reads (files that do not exist are ignored).

    Returns:
        list of :class:`pathlib.Path`, the files to write (symbolic links resolved).

    Raises:
        OutputError: an output exists and is not a regular file, is an input, shares its
            file with another output, or its folder does not exist.
    """
    checked, labels = [], []
    for label, path in outputs:
        path = pathlib.Path(os.fspath(path))
        real = _real(path)
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise OutputError(f'{label} {path}: cannot check it: {exc.strerror or exc}') \
                from None
        if mode is not None and not stat.S_ISREG(mode):
            kind = ('a folder' if stat.S_ISDIR(mode) else 'a device' if stat.S_ISCHR(mode)
                    or stat.S_ISBLK(mode) else 'a FIFO' if stat.S_ISFIFO(mode)
                    else 'a socket' if stat.S_ISSOCK(mode) else 'not a regular file')
            raise OutputError(f'{label} {path} is {kind}: only a regular file (or a new one) '
                              'is written')
        if not real.parent.is_dir():
            raise OutputError(f'cannot write {label} {path}: no folder {real.parent}')
        for source in inputs:
            if source is not None and os.path.exists(source) and _same(path, source):
                raise OutputError(f'{label} {path} is the input {source}: it would be '
                                  'overwritten; write elsewhere')
        for (other_label, other_path), other in zip(labels, checked):
            if real == other or (mode is not None and _same(real, other)):
                raise OutputError(f'{label} {path} is the same file as {other_label} '
                                  f'{other_path}: one output would be lost')
        checked.append(real)
        labels.append((label, path))
    return checked


def _umask_mode():
    """Return the permissions a new file gets under the process's umask (0o666 & ~umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_outputs(files, inputs=()):
    """Write every (path, content) atomically, all or nothing (module docstring).

    Args:
        files: sequence of (path, str or bytes), or of (label, path, content) to name
            the output in messages by its option; str is written as UTF-8.
        inputs: as for :func:`check_outputs` (checked again here).

    Raises:
        OutputError: as :func:`check_outputs`, or the writing failed (disk full, no
            permission): the message names the path; nothing was changed.
    """
    files = [item if len(item) == 3 else ('output', *item) for item in files]
    targets = check_outputs([(label, path) for label, path, _ in files], inputs)
    staged = []
    try:
        for target, (_, path, content) in zip(targets, files):
            data = content.encode('utf-8') if isinstance(content, str) else bytes(content)
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = _umask_mode()
            try:
                handle, temporary = tempfile.mkstemp(prefix=f'.{target.name}.',
                                                     dir=target.parent)
            except OSError as exc:
                raise OutputError(f'cannot write {path}: {exc.strerror or exc}') from None
            staged.append(temporary)
            try:
                with os.fdopen(handle, 'wb') as stream:
                    stream.write(data)
                    stream.flush()
                    os.fsync(stream.fileno())
                os.chmod(temporary, mode)
            except OSError as exc:
                reason = ('no space left on device' if exc.errno == errno.ENOSPC
                          else exc.strerror or str(exc))
                raise OutputError(f'cannot write {path}: {reason}') from None
        for temporary, target, (_, path, _) in zip(staged, targets, files):
            try:
                os.replace(temporary, target)
            except OSError as exc:
                raise OutputError(f'cannot write {path}: {exc.strerror or exc}') from None
    finally:
        for temporary in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)


def read_node_parameters(path, node='computed_torque_node'):
    """Return ``node``'s ``ros__parameters`` in a ROS 2 parameter YAML file ({} if none).

    The section of the node's name (with or without a namespace) or ``/**`` (every node,
    as ``ne-dynamics identify`` writes it), parameter groups as dotted names; None
    ``path``: {}.

    Raises:
        OSError: the file cannot be read. yaml.YAMLError: it is not YAML.
    """
    if path is None:
        return {}
    import yaml
    with open(path, encoding='utf-8') as stream:
        content = yaml.safe_load(stream) or {}
    if not isinstance(content, dict):
        return {}
    for key, value in content.items():
        if str(key).strip('/').split('/')[-1] in (node, '**'):
            return _flat(dict((value or {}).get('ros__parameters', {}) or {}))
    return {}


def _flat(values, prefix=''):
    """Return nested parameter groups as dotted names (``contact: threshold:``, as ROS)."""
    flat = {}
    for key, value in values.items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            flat.update(_flat(value, name + '.'))
        else:
            flat[name] = value
    return flat


__all__ = ['check_outputs', 'OutputError', 'read_node_parameters', 'write_outputs']
