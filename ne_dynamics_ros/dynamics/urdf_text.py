"""Reading a URDF document safely: its text, then urdf_parser_py's ``Robot`` of it.

Pure module (no ROS). Files are read as bytes and decoded as their XML declaration says
(UTF-8 otherwise); documents larger than :data:`MAX_URDF_BYTES` are refused before
parsing; ``defusedxml`` rejects entity declarations and external references before any
expansion (an entity-expansion "billion laughs" document is refused at once); a xacro
document is told to go through xacro first; names, references and the numeric attributes
this package reads are checked so that a bad one is named; ``urdf_parser_py``'s
complaints about unknown tags and attributes (vendor extensions) are collected into one
line on the ``ne_dynamics_ros`` logger. Only :class:`~ne_dynamics_ros.errors.URDFError`
leaves this module for a bad document.

:mod:`ne_dynamics_ros.dynamics.urdf_import` turns the parsed ``Robot`` into the chain.
"""
import collections
import logging
import os
import pickle
import re
import threading

import defusedxml
import defusedxml.ElementTree as SafeET

from ..errors import shorten, URDFError

#: Largest URDF accepted, bytes (a real arm's is well under 1 MB); ``load_model(...,
#: max_bytes=...)`` overrides it.
MAX_URDF_BYTES = 16 * 2**20
LOGGER = logging.getLogger('ne_dynamics_ros')
XACRO_NAMESPACE = 'http://www.ros.org/wiki/xacro'
#: Documents parsed lately (at most 8, each under 1 MB), by their bytes: the pickled
#: ``Robot`` and urdf_parser_py's complaints. urdf_parser_py's reflection takes ~4 ms for
#: the UR5e's description, unpickling 0.2 ms; every caller gets an object of its own.
_PARSED = collections.OrderedDict()
_PARSED_LOCK = threading.Lock()
_PARSED_MAX, _PARSED_MAX_BYTES = 8, 2**20


def read_urdf_text(urdf, max_bytes=None):
    """Return the URDF XML text: ``urdf`` is either XML (starts with '<') or a file path.

    A file is read as bytes and decoded with the encoding its XML declaration names
    (UTF-8 when none); a UTF-8 byte-order mark is dropped. Nothing larger than
    ``max_bytes`` (default :data:`MAX_URDF_BYTES`) is read. Every reader of the package
    (the model, the identification, both simulation plants, the nodes) goes through it.

    Raises:
        URDFError: wrong argument type, no such file (the path tried), unreadable, too
            large, or not decodable as declared.
    """
    limit = MAX_URDF_BYTES if max_bytes is None else max_bytes
    if isinstance(urdf, bytes):
        raw, where = urdf, 'the URDF bytes'
    elif isinstance(urdf, (str, os.PathLike)):
        text = os.fspath(urdf)
        if not isinstance(text, str):
            raise URDFError(f'urdf path must be text, got {type(text).__name__}')
        if text.lstrip().startswith('<'):
            if len(text) > limit:
                raise URDFError(f'the URDF text has {len(text)} characters, more than the '
                                f'{limit} allowed (max_bytes)')
            return text
        if '\0' in text or '\n' in text or len(text) > 4096:
            raise URDFError(f'urdf is neither XML (it does not start with "<") nor a file '
                            f'path: {shorten(text)!r}')
        where = f'URDF file {text!r}'
        try:
            size = os.path.getsize(text)
            if size > limit:
                raise URDFError(f'{where} has {size} bytes, more than the {limit} allowed '
                                '(max_bytes)')
            with open(text, 'rb') as f:
                raw = f.read(limit + 1)
        except FileNotFoundError:
            raise URDFError(f'URDF file not found: {text!r} (tried '
                            f'{os.path.abspath(text)!r})') from None
        except OSError as exc:
            raise URDFError(f'cannot read {where}: {exc.strerror or exc}') from None
    else:
        raise URDFError(f'urdf must be an XML string or a file path, got '
                        f'{type(urdf).__name__}')
    if len(raw) > limit:
        raise URDFError(f'{where} is larger than the {limit} bytes allowed (max_bytes)')
    if raw.startswith(b'\xef\xbb\xbf'):
        raw = raw[3:]                                   # UTF-8 byte-order mark
    declared = re.match(rb'\s*<\?xml[^>]*encoding\s*=\s*["\']([A-Za-z0-9._-]+)["\']', raw)
    encoding = declared.group(1).decode('ascii') if declared else 'utf-8'
    try:
        return raw.decode(encoding)
    except LookupError:
        raise URDFError(f'{where} declares an unknown encoding {encoding!r}') from None
    except UnicodeDecodeError as exc:
        raise URDFError(f'{where} is not {encoding} text (byte {exc.start}: '
                        f'{exc.reason}); is it a URDF?') from None


def urdf_xml_bytes(urdf, max_bytes=None):
    """Return the URDF as UTF-8 bytes without its XML declaration, for an XML parser.

    ``urdf``: XML text or a file path, read by :func:`read_urdf_text` (size bound,
    declared encoding, byte-order mark).

    Raises:
        URDFError: as :func:`read_urdf_text`, or text that cannot be encoded.
    """
    text = read_urdf_text(urdf, max_bytes).lstrip('\ufeff')
    # the declaration was honoured when decoding; the parsers get text without it
    text = re.sub(r'\A\s*<\?xml[^>]*\?>', '', text, count=1)
    try:
        return text.encode('utf-8')
    except UnicodeEncodeError as exc:
        raise URDFError(f'the URDF text cannot be encoded ({exc.reason} at character '
                        f'{exc.start})') from None


def parse_urdf(urdf, max_bytes=None):
    """Parse a URDF safely.

    Args:
        urdf: XML string or file path.
        max_bytes: size bound (default :data:`MAX_URDF_BYTES`).

    Returns:
        urdf_parser_py ``Robot``, the caller's own: a document among the last 8 parsed
        (under 1 MB each) is unpickled from them rather than read again.

    Raises:
        URDFError: malformed XML, entity declarations / external references (rejected by
            defusedxml before any expansion), or a document urdf_parser_py cannot read.
    """
    from urdf_parser_py.urdf import URDF

    from urdf_parser_py.xml_reflection import core

    data = urdf_xml_bytes(urdf, max_bytes)
    with _PARSED_LOCK:
        parsed = _PARSED.get(data)
        if parsed is not None:
            _PARSED.move_to_end(data)
    if parsed is not None:
        _say_complaints(parsed[1])
        return pickle.loads(parsed[0])
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except defusedxml.DefusedXmlException as exc:
        raise URDFError(f'URDF rejected: {exc} (DTDs and entity declarations are not '
                        'allowed in a robot description)') from exc
    except SafeET.ParseError as exc:
        raise URDFError(f'malformed URDF XML: {exc}') from exc
    if root.tag != 'robot':
        raise URDFError(f'URDF root element must be <robot>, got <{shorten(root.tag)}>')
    if any(XACRO_NAMESPACE in element.tag or any(
            XACRO_NAMESPACE in value or '${' in value for value in element.attrib.values())
            for element in root.iter()):
        raise URDFError('this is a xacro document, not a URDF: run xacro first '
                        '(xacro robot.urdf.xacro > robot.urdf)')
    _check_raw_elements(root)
    complaints = []
    previous = core.on_error
    core.on_error = complaints.append
    try:
        robot = URDF.from_xml_string(data.decode("utf-8"))
    except Exception as exc:  # urdf_parser_py raises assorted types on bad documents
        raise URDFError(f'invalid URDF: {shorten(exc, 300)}') from None
    finally:
        core.on_error = previous
    _say_complaints(complaints)
    if len(data) <= _PARSED_MAX_BYTES:
        with _PARSED_LOCK:
            _PARSED[data] = (pickle.dumps(robot), list(complaints))
            while len(_PARSED) > _PARSED_MAX:
                _PARSED.popitem(last=False)
    return robot


def _say_complaints(complaints):
    """Log urdf_parser_py's complaints about a document in one line (none: nothing)."""
    if complaints:
        LOGGER.info('urdf_parser_py ignored %d unknown elements or attributes (vendor '
                    'extensions), e.g. %s', len(complaints), shorten(complaints[0], 120))


def _unique_names(root, tag):
    """Names of the ``<tag>`` children of ``root``; each must exist and be unique."""
    names = set()
    for element in root.findall(tag):
        name = element.get('name')
        if not name:
            raise URDFError(f'a <{tag}> element has no name')
        if name in names:
            raise URDFError(f'duplicate <{tag} name="{name}">')
        names.add(name)
    return names


#: The numeric attributes this package reads, per element path below <link>/<joint>, with
#: their count of numbers (None: one or more). urdf_parser_py reports a bad number in
#: some of them without saying where (``could not convert string to float``); they are
#: checked here first so that the message names the element.
NUMERIC_ATTRIBUTES = {
    ('link', 'inertial/origin'): {'xyz': 3, 'rpy': 3},
    ('link', 'inertial/mass'): {'value': 1},
    ('link', 'inertial/inertia'): {k: 1 for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')},
    ('joint', 'origin'): {'xyz': 3, 'rpy': 3},
    ('joint', 'axis'): {'xyz': 3},
    ('joint', 'limit'): {k: 1 for k in ('lower', 'upper', 'effort', 'velocity')},
    ('joint', 'dynamics'): {'damping': 1, 'friction': 1},
}


def _check_numbers(root):
    """Raise URDFError naming the element and attribute of a value that is no number."""
    for (kind, path), attributes in NUMERIC_ATTRIBUTES.items():
        for owner in root.findall(kind):
            for element in owner.findall(path):
                for attribute, count in attributes.items():
                    text = element.get(attribute)
                    if text is None:
                        continue
                    where = (f'<{kind} name="{shorten(owner.get("name"))}">/{path} '
                             f'attribute {attribute}="{shorten(text)}"')
                    words = text.split()
                    if len(words) != count:
                        raise URDFError(f'{where}: expected {count} number'
                                        f'{"s" if count > 1 else ""}, got {len(words)}')
                    for word in words:
                        try:
                            float(word)
                        except ValueError:
                            raise URDFError(f'{where}: {shorten(word)!r} is not a '
                                            'number') from None


def _check_raw_elements(root):
    """Check what urdf_parser_py does not (it tolerates missing names and references)."""
    _check_numbers(root)
    links = _unique_names(root, 'link')
    _unique_names(root, 'joint')
    for joint in root.findall('joint'):
        name = joint.get('name')
        for tag in ('parent', 'child'):
            el = joint.find(tag)
            if el is None or el.get('link') not in links:
                ref = None if el is None else el.get('link')
                raise URDFError(f'joint "{name}": <{tag} link="{ref}"> is not a link of '
                                'this robot')
        if joint.get('type') is None:
            raise URDFError(f'joint "{name}" has no type')


__all__ = ['MAX_URDF_BYTES', 'NUMERIC_ATTRIBUTES', 'parse_urdf', 'read_urdf_text',
           'urdf_xml_bytes']
