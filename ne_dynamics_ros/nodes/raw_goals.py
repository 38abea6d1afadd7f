"""FollowJointTrajectory goals taken as CDR bytes by rclpy's own action server.

rclpy's ``ActionServer`` turns every goal request into Python message objects, point by
point, before any callback runs: 19.8 ms for a 1 000-point UR5e goal on this project's
machine and 1.2 s for 50 000 points (2026-12-07), more than every check the goal then
gets. rclpy offers no raw form of an action goal, but it takes the request through the
converter the request's message class names (its metaclass's ``_CONVERT_TO_PY``, a
capsule of a C function from the C message to a Python object). :func:`fast_goal_type`
returns an action type that is FollowJointTrajectory in every respect (its type support,
so the same DDS topics and type, its responses, feedback and results) but for that
converter: in its place one that serialises the C message rmw took back to CDR with
``rmw_serialize`` (C, the rmw rclpy runs on) and reads it with
:func:`~ne_dynamics_ros.nodes.cdr.read_follow_joint_trajectory_goal` (every point at once
with NumPy). The goal callback then gets a :class:`~ne_dynamics_ros.nodes.cdr.
GoalRequestFields` instead of a ``FollowJointTrajectory.Goal``; a request the reader
leaves to rclpy (a multi-DOF trajectory with points, per-component tolerances, another
encoding, bytes it refuses) is converted by rclpy's own converter, unchanged, and counted.

Where the pieces are not found (no ``rmw_serialize`` among the loaded libraries, a
message class without the converters), :func:`fast_goal_type` returns None, says why, and
the caller keeps the plain type. ``test/ros/test_raw_goals.py`` checks the goals both
ways against rclpy's own conversion, through a real action server and client.
"""
import ctypes
import os
import threading
from types import SimpleNamespace
from typing import Tuple

import numpy as np

from ne_dynamics_ros.nodes.cdr import read_follow_joint_trajectory_goal

__all__ = ['fast_goal_type', 'GoalTypeUnavailable']

#: ``PyObject * convert_to_py(void * ros_message)``, called by rclpy with the GIL held.
_CONVERTER = ctypes.CFUNCTYPE(ctypes.py_object, ctypes.c_void_p)
#: rclpy's own converter, called from Python: the GIL stays held (PYFUNCTYPE), the new
#: reference it returns taken as an address (see ``_OriginalConverter``).
_ORIGINAL = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)


#: The CPython API calls used, as prototypes of this module's own (setting ``argtypes`` on
#: ``ctypes.pythonapi``'s shared function objects would change them for every user).
_CAPSULE_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ('PyCapsule_GetPointer', ctypes.pythonapi))
_NEW_CAPSULE = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(('PyCapsule_New', ctypes.pythonapi))
_DECREF = ctypes.PYFUNCTYPE(None, ctypes.py_object)(('Py_DecRef', ctypes.pythonapi))


class GoalTypeUnavailable(RuntimeError):
    """The fast goal type cannot be set up here (the reason); the plain type serves."""


class _Allocator(ctypes.Structure):
    """``rcutils_allocator_t``: four function pointers and a state pointer."""

    _fields_ = [('allocate', ctypes.c_void_p), ('deallocate', ctypes.c_void_p),
                ('reallocate', ctypes.c_void_p), ('zero_allocate', ctypes.c_void_p),
                ('state', ctypes.c_void_p)]


class _SerializedMessage(ctypes.Structure):
    """``rmw_serialized_message_t`` (``rcutils_uint8_array_t``)."""

    _fields_ = [('buffer', ctypes.c_void_p), ('buffer_length', ctypes.c_size_t),
                ('buffer_capacity', ctypes.c_size_t), ('allocator', _Allocator)]


def _loaded_library(symbol: str, prefixes: Tuple[str, ...]):
    """Return the function ``symbol`` of a library this process loaded, or None.

    Looked up by name among the shared objects in ``/proc/self/maps`` whose file name
    starts with one of ``prefixes`` (opened with ``RTLD_NOLOAD``: nothing new is loaded);
    rclpy loads them with local symbols, so the process's global namespace lacks them.
    """
    try:
        with open('/proc/self/maps') as maps:       # the mapped file is the last column
            paths = dict.fromkeys(line.split()[-1] for line in maps
                                  if '.so' in os.path.basename(line.rstrip()))
    except OSError:
        return None
    for prefix in prefixes:
        for path in paths:
            if os.path.basename(path).startswith(prefix):
                try:
                    library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | ctypes.RTLD_LOCAL)
                    return getattr(library, symbol)
                except (OSError, AttributeError):
                    continue
    return None


class _Serializer:
    """``rmw_serialize`` of one message type into a buffer kept between calls."""

    def __init__(self, type_support_capsule):
        serialize = _loaded_library('rmw_serialize', ('librmw_implementation',
                                                      'librmw_fastrtps', 'librmw_cyclonedds',
                                                      'librmw_connextdds', 'librmw'))
        allocator = _loaded_library('rcutils_get_default_allocator', ('librcutils',))
        init = _loaded_library('rcutils_uint8_array_init', ('librcutils',))
        if serialize is None or allocator is None or init is None:
            raise GoalTypeUnavailable('rmw_serialize or rcutils not found among the '
                                      'libraries rclpy loaded')
        self._type_support = _CAPSULE_POINTER(type_support_capsule, None)
        serialize.restype = ctypes.c_int
        serialize.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.POINTER(_SerializedMessage)]
        allocator.restype, allocator.argtypes = _Allocator, []
        init.restype = ctypes.c_int
        init.argtypes = [ctypes.POINTER(_SerializedMessage), ctypes.c_size_t,
                         ctypes.POINTER(_Allocator)]
        self._serialize = serialize
        self._message = _SerializedMessage()
        self._default_allocator = allocator()
        if init(ctypes.byref(self._message), 0, ctypes.byref(self._default_allocator)):
            raise GoalTypeUnavailable('rcutils_uint8_array_init failed')
        self._lock = threading.Lock()

    def __call__(self, address: int) -> bytes:
        """Return the CDR bytes of the C message at ``address`` (RuntimeError: rmw failed)."""
        with self._lock:
            if self._serialize(address, self._type_support, ctypes.byref(self._message)):
                raise RuntimeError('rmw_serialize failed')
            return ctypes.string_at(self._message.buffer, self._message.buffer_length)


class _OriginalConverter:
    """rclpy's own ``_CONVERT_TO_PY`` of a message class, callable from Python."""

    def __init__(self, capsule):
        self._call = _ORIGINAL(_CAPSULE_POINTER(capsule, None))

    def __call__(self, address: int):
        """Return the message object (rclpy's conversion of the C message at ``address``)."""
        pointer = self._call(address)
        if not pointer:
            raise RuntimeError('the message\'s own conversion failed')
        message = ctypes.cast(pointer, ctypes.py_object).value
        _DECREF(message)               # the converter's new reference: ``message`` holds one
        return message


class _FastRequest:
    """What rclpy's action server reads of a taken goal request: its id and its goal."""

    __slots__ = ('goal_id', 'goal')

    def __init__(self, goal_id, goal):
        self.goal_id, self.goal = goal_id, goal


def fast_goal_type(action_type, max_names: int, max_points: int, log=None):
    """Return ``action_type`` with goal requests read as bytes (module docstring), or None.

    Args:
        action_type: ``control_msgs.action.FollowJointTrajectory``.
        max_names, max_points: the reader's bounds (a request over them goes to rclpy's
            own conversion, and the callback's checks refuse it).
        log: called with the reason when the type cannot be made (None: silent).

    Returns:
        An action type for ``rclpy.action.ActionServer``, whose goal callback then gets
        :class:`~ne_dynamics_ros.nodes.cdr.GoalRequestFields` (or, for a request left to
        rclpy, a ``FollowJointTrajectory.Goal``); its dict ``conversions`` counts the
        requests read as bytes (``'bytes'``) and those left to rclpy (``'rclpy'``). None
        where it cannot be made here.
    """
    try:
        return _fast_goal_type(action_type, max_names, max_points)
    except (GoalTypeUnavailable, AttributeError, OSError, TypeError, ValueError) as err:
        if log is not None:
            log(f'goals are converted by rclpy ({type(err).__name__}: {err})')
        return None


def _fast_goal_type(action_type, max_names, max_points):
    """:func:`fast_goal_type`, raising where it cannot be made."""
    from rclpy.type_support import check_for_type_support
    from unique_identifier_msgs.msg import UUID
    check_for_type_support(action_type)
    request = action_type.Impl.SendGoalService.Request
    check_for_type_support(request)
    meta = request.__class__
    serialize = _Serializer(meta._TYPE_SUPPORT)
    original = _OriginalConverter(meta._CONVERT_TO_PY)
    conversions = {'bytes': 0, 'rclpy': 0}

    def convert(address):
        try:
            fields = read_follow_joint_trajectory_goal(serialize(address), max_names,
                                                       max_points)
            request = _FastRequest(UUID(uuid=np.frombuffer(fields.goal_id, np.uint8)), fields)
            conversions['bytes'] += 1
            return request
        except Exception:   # noqa: BLE001 - never an exception into rclpy's C++ frame
            conversions['rclpy'] += 1
            return original(address)

    callback = _CONVERTER(convert)
    capsule = _NEW_CAPSULE(ctypes.cast(callback, ctypes.c_void_p), None, None)
    request_meta = type(f'{meta.__name__}_bytes', (type,), {
        '_CREATE_ROS_MESSAGE': meta._CREATE_ROS_MESSAGE,
        '_DESTROY_ROS_MESSAGE': meta._DESTROY_ROS_MESSAGE,
        '_CONVERT_FROM_PY': meta._CONVERT_FROM_PY,
        '_CONVERT_TO_PY': capsule,
        '_TYPE_SUPPORT': meta._TYPE_SUPPORT,
        # the callback and its capsule live as long as the type
        '_keep': (callback, serialize, original)})
    fast_request = request_meta(request.__name__, (), {})
    impl = action_type.Impl
    fast_impl = SimpleNamespace(**{name: getattr(impl, name) for name in dir(impl)
                                   if not name.startswith('__')})
    fast_impl.SendGoalService = SimpleNamespace(
        Request=fast_request, Response=impl.SendGoalService.Response)
    action_meta = type(f'{type(action_type).__name__}_bytes', (type,), {
        '_TYPE_SUPPORT': type(action_type)._TYPE_SUPPORT})

    attributes = {name: getattr(action_type, name) for name in ('Goal', 'Result', 'Feedback')}
    attributes['Impl'] = fast_impl
    attributes['conversions'] = conversions
    return action_meta(action_type.__name__, (), attributes)
