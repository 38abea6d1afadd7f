"""Every bad input raises a documented ValueError subclass naming the element or argument."""
import re
import tracemalloc
from xml.sax.saxutils import escape

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from references import UR5E_URDF
from ne_dynamics_ros import InertiaError, load_model, ModelError, StateError, URDFError

GOOD_LINK = ('<link name="{name}"><inertial><mass value="1"/>'
             '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def two_link(joint_type='revolute', inertia='ixx="0.1" iyy="0.1" izz="0.1"', mass='1',
             extra=''):
    return f"""<robot name="r"><link name="base"/>
      <link name="arm"><inertial><mass value="{mass}"/>
        <inertia {inertia} ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j1" type="{joint_type}"><parent link="base"/><child link="arm"/>
        <axis xyz="0 0 1"/><limit effort="5" velocity="1" lower="-1" upper="1"/>{extra}
      </joint></robot>"""


def test_errors_are_value_errors():
    for cls in (ModelError, URDFError, InertiaError, StateError):
        assert issubclass(cls, ValueError)


@pytest.mark.parametrize('xml', ['<robot name="x"><link name="a"></robot>', 'not xml at all <',
                                 '<robot name="x"><link name="a"/>'])
def test_malformed_xml(xml):
    with pytest.raises(URDFError, match='malformed|cannot read|not found'):
        load_model(xml)


def test_missing_file_names_it():
    with pytest.raises(URDFError, match='no_such.urdf'):
        load_model('/tmp/no_such.urdf')


def test_billion_laughs_rejected_quickly():
    lol = '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    for k in range(1, 10):
        prev = f'&lol{k - 1};' if k > 1 else '&lol;'
        lol += f' <!ENTITY lol{k} "{prev * 10}">\n'
    lol += ']>\n<robot name="r"><link name="&lol9;"/></robot>'
    # refused before any expansion: the entities would expand to 10**9 'lol's (3 GB); the
    # memory the refusal allocated is what proves it, not how long it took
    tracemalloc.start()
    try:
        with pytest.raises(URDFError, match='DTD|entit'):
            load_model(lol)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1024 * 1024, f'{peak} bytes allocated'


def test_unknown_base_and_tip():
    with pytest.raises(URDFError, match='base_link "nope"'):
        load_model(str(UR5E_URDF), base_link='nope')
    with pytest.raises(URDFError, match='tip_link "nope"'):
        load_model(str(UR5E_URDF), tip_link='nope')
    with pytest.raises(URDFError, match='not below'):
        load_model(str(UR5E_URDF), base_link='wrist_3_link', tip_link='upper_arm_link')


def test_branching_tree_lists_candidates():
    xml = """<robot name="y"><link name="b"/><link name="l"/><link name="r"/>
      <joint name="jl" type="continuous"><parent link="b"/><child link="l"/></joint>
      <joint name="jr" type="continuous"><parent link="b"/><child link="r"/></joint></robot>"""
    with pytest.raises(URDFError, match=r"branches.*\['l', 'r'\]"):
        load_model(xml)
    assert load_model(xml, tip_link='r').joint_names == ['jr']


@pytest.mark.parametrize('jtype', ['floating', 'planar'])
def test_floating_and_planar_in_chain(jtype):
    xml = two_link().replace('type="revolute"', f'type="{jtype}"')
    with pytest.raises(URDFError, match=f'joint "j1" of type "{jtype}"'):
        load_model(xml, tip_link='arm')


def test_mimic_in_chain():
    xml = """<robot name="m"><link name="b"/><link name="a"/><link name="c"/>
      <joint name="j1" type="continuous"><parent link="b"/><child link="a"/></joint>
      <joint name="j2" type="continuous"><parent link="a"/><child link="c"/>
        <mimic joint="j1" multiplier="2"/></joint></robot>"""
    with pytest.raises(URDFError, match='joint "j2".*mimics "j1"'):
        load_model(xml)


def test_no_actuated_joint():
    xml = """<robot name="f"><link name="b"/><link name="a"/>
      <joint name="j" type="fixed"><parent link="b"/><child link="a"/></joint></robot>"""
    with pytest.raises(URDFError, match='no movable joint'):
        load_model(xml)
    with pytest.raises(URDFError, match='no revolute'):
        load_model(xml, tip_link='a')


def test_joint_to_unknown_link():
    xml = two_link().replace('<child link="arm"/>', '<child link="ghost"/>')
    with pytest.raises(URDFError, match='joint "j1".*ghost'):
        load_model(xml)


def test_negative_mass():
    with pytest.raises(InertiaError, match='link "arm".*mass'):
        load_model(two_link(mass='-1'))


@pytest.mark.parametrize('inertia,why', [
    ('ixx="-0.1" iyy="0.1" izz="0.1"', 'positive semi-definite'),
    ('ixx="0.1" iyy="0.1" izz="0.5"', 'triangle'),
    ('ixx="nan" iyy="0.1" izz="0.1"', 'non-finite'),
])
def test_unphysical_inertia(inertia, why):
    with pytest.raises(InertiaError, match=f'link "arm".*{why}'):
        load_model(two_link(inertia=inertia))


def test_zero_axis():
    xml = two_link().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>')
    with pytest.raises(URDFError, match='joint "j1".*axis'):
        load_model(xml)


def test_bad_convention_and_armature():
    with pytest.raises(ModelError, match='convention'):
        load_model(two_link(), convention='craig')
    with pytest.raises(StateError, match='armature'):
        load_model(two_link(), armature=[1.0, 2.0])
    with pytest.raises(ModelError, match='armature'):
        load_model(two_link(), armature=[-1.0])


@pytest.fixture(scope='module')
def ur5e():
    return load_model(str(UR5E_URDF), tip_link='tool0')


@pytest.mark.parametrize('bad', [np.zeros(5), np.zeros((2, 5)), np.zeros((2, 3, 6)),
                                 [np.nan] + [0.0] * 5, [np.inf] + [0.0] * 5, 'abc'])
def test_bad_state_arrays(ur5e, bad):
    good = np.zeros(6)
    with pytest.raises(StateError, match='q'):
        ur5e.rnea(bad, good, good)
    with pytest.raises(StateError, match='qdd'):
        ur5e.rnea(good, good, bad)


def test_mismatched_batch_shapes(ur5e):
    with pytest.raises(StateError, match='same shape'):
        ur5e.rnea(np.zeros((3, 6)), np.zeros((4, 6)), np.zeros((3, 6)))


def test_bad_gravity_and_wrench(ur5e):
    z = np.zeros(6)
    with pytest.raises(StateError, match='gravity'):
        ur5e.rnea(z, z, z, gravity=(0, 0, np.nan))
    with pytest.raises(StateError, match='f_tip'):
        ur5e.rnea(z, z, z, f_tip=np.zeros(5))
    with pytest.raises(StateError, match='tau'):
        ur5e.forward_dynamics(z, z, [np.inf] * 6)


@pytest.mark.parametrize('xml,match', [
    ('<robot name="r"><link name="a"/><link name="a"/></robot>', 'duplicate <link name="a">'),
    ('<robot name="r"><link/></robot>', 'a <link> element has no name'),
    ('<robot name="r"><link name="a"/><link name="b"/>'
     '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>'
     '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>',
     'duplicate <joint name="j">'),
    ('<robot name="r"><link name="a"/><link name="b"/>'
     '<joint name="j"><parent link="a"/><child link="b"/></joint></robot>',
     'joint "j" has no type'),
])
def test_duplicate_or_missing_names(xml, match):
    with pytest.raises(URDFError, match=match):
        load_model(xml)


# ---- hostile descriptions: only URDFError, never a hang, a RecursionError or a NaN --------

def chain(n, joint='fixed', tip=''):
    links = ''.join(f'<link name="l{i}"/>' for i in range(n + 1))
    joints = ''.join(f'<joint name="j{i}" type="{joint}"><parent link="l{i}"/>'
                     f'<child link="l{i + 1}"/><origin xyz="0 0 0.001"/></joint>'
                     for i in range(n - 1))
    last = (f'<joint name="j{n - 1}" type="revolute"><parent link="l{n - 1}"/>'
            f'<child link="l{n}"/><axis xyz="0 0 1"/>'
            '<limit effort="1" velocity="1" lower="-1" upper="1"/></joint>')
    return f'<robot name="long">{links}{joints}{last}{tip}</robot>'


def test_a_2000_link_chain_loads_without_recursion():
    model = load_model(chain(2000))
    assert model.n == 1 and model.tip_link == 'l2000'


@pytest.mark.parametrize('extra, match', [
    # a joint whose parent is its own child
    ('<link name="x"/><joint name="loop" type="fixed"><parent link="x"/><child link="x"/>'
     '</joint>', 'two parent joints|cycle|root'),
    # a link with two parents
    ('<joint name="again" type="fixed"><parent link="l0"/><child link="l2"/></joint>',
     'link "l2" has two parent joints'),
    # a cycle disconnected from the base (its own root-less loop)
    ('<link name="a"/><link name="b"/><joint name="ab" type="fixed"><parent link="a"/>'
     '<child link="b"/></joint><joint name="ba" type="fixed"><parent link="b"/>'
     '<child link="a"/></joint>', 'cycle|two parent|root'),
])
def test_cycles_and_second_parents_are_errors(extra, match):
    with pytest.raises(URDFError, match=match):
        load_model(chain(3, tip=extra))
    with pytest.raises(URDFError, match=match):      # also with the tip inside the loop
        load_model(chain(3, tip=extra), base_link='l0', tip_link='l3')


@pytest.mark.timeout(120)     # a hang would be endless: pytest-timeout ends it as a failure
def test_tip_in_a_cycle_disconnected_from_the_base_does_not_hang():
    extra = ('<link name="a"/><link name="b"/><joint name="ab" type="fixed"><parent link="a"/>'
             '<child link="b"/></joint><joint name="ba" type="fixed"><parent link="b"/>'
             '<child link="a"/></joint>')
    with pytest.raises(URDFError, match='cycle|not below'):
        load_model(chain(3, tip=extra), base_link='l0', tip_link='a')


def test_bytes_encodings_paths_and_argument_types(tmp_path):
    binary = tmp_path / 'binary.urdf'
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(URDFError, match='binary.urdf.*is not utf-8 text'):
        load_model(str(binary))
    latin = tmp_path / 'latin.urdf'
    latin.write_bytes(('<?xml version="1.0" encoding="ISO-8859-1"?>\n'
                       + two_link().replace('name="r"', 'name="r\u00e9sum\u00e9"'))
                      .encode('iso-8859-1'))
    assert load_model(str(latin)).n == 1                       # read as declared
    with pytest.raises(URDFError, match='cannot be encoded'):
        load_model(two_link().replace('name="r"', 'name="\ud800"'))   # a lone surrogate
    with pytest.raises(URDFError, match='neither XML'):
        load_model('robot\0.urdf')
    with pytest.raises(URDFError, match='tip_link must be a link name'):
        load_model(two_link(), tip_link=['arm'])
    with pytest.raises(URDFError, match='must be an XML string or a file path'):
        load_model(42)
    with pytest.raises(URDFError, match='tried'):
        load_model(str(tmp_path / 'missing.urdf'))


def test_long_non_xml_text_is_cut_in_the_message():
    with pytest.raises(URDFError) as info:
        load_model('x' * 13000)
    assert len(str(info.value)) < 300 and '13000 characters' in str(info.value)


def test_size_bound_is_documented_and_overridable(tmp_path):
    big = two_link().replace('</robot>', '<!--' + ' ' * 5000 + '--></robot>')
    with pytest.raises(URDFError, match='more than the 1000 allowed'):
        load_model(big, max_bytes=1000)
    assert load_model(big).n == 1
    path = tmp_path / 'big.urdf'
    path.write_text(big)
    with pytest.raises(URDFError, match='big.urdf.*more than the 1000 allowed'):
        load_model(str(path), max_bytes=1000)


@pytest.mark.parametrize('xml, error, match', [
    (two_link(mass='1e308'), InertiaError, 'mass 1e\\+308 kg is beyond'),
    (two_link().replace('<axis', '<origin xyz="1e300 0 0"/><axis'), URDFError,
     'joint "j1".*beyond 10000 m'),
    (two_link().replace('<inertia', '<origin xyz="0 1e200 0"/><inertia'), URDFError,
     'link "arm" <inertial>.*beyond'),
    (two_link(inertia='ixx="1e300" iyy="1e300" izz="1e300"'), InertiaError, 'beyond 1e\\+12'),
    (two_link(extra='<dynamics damping="inf"/>'), URDFError,
     'joint "j1": <dynamics damping="inf"> must be finite'),
    (two_link(extra='<dynamics friction="inf"/>'), URDFError, 'friction="inf"'),
    (two_link().replace('effort="5"', 'effort="-5"'), URDFError,
     'joint "j1": <limit effort="-5.0"> must be > 0'),
    (two_link().replace('effort="5"', 'effort="nan"'), URDFError, 'effort="nan"'),
    (two_link().replace('lower="-1" upper="1"', 'lower="1" upper="-1"'), URDFError,
     'joint "j1": <limit lower="1.0"> is above upper="-1.0"'),
])
def test_values_whose_dynamics_cannot_be_finite_are_refused(xml, error, match):
    with pytest.raises(error, match=match):
        load_model(xml)


def test_xacro_is_recognised():
    xacro = ('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
             '<xacro:property name="l" value="0.3"/><link name="base"/></robot>')
    with pytest.raises(URDFError, match='run xacro first'):
        load_model(xacro)
    with pytest.raises(URDFError, match='run xacro first'):
        load_model(two_link().replace('lower="-1"', 'lower="${-pi}"'))


def test_vendor_extensions_give_one_log_line_and_no_stderr(capfd, caplog):
    xml = two_link().replace('<link name="base"/>', '<link name="base">' + ''.join(
        f'<vendor_tag_{i}/>' for i in range(20)) + '</link>')
    with caplog.at_level('INFO', logger='ne_dynamics_ros'):
        assert load_model(xml).n == 1
    assert capfd.readouterr().err == ''
    lines = [r for r in caplog.records if 'urdf_parser_py ignored' in r.getMessage()]
    assert len(lines) == 1 and '20 unknown' in lines[0].getMessage()
    caplog.clear()
    with caplog.at_level('INFO', logger='ne_dynamics_ros'):   # parsed again: said again
        assert load_model(xml).n == 1
    lines = [r for r in caplog.records if 'urdf_parser_py ignored' in r.getMessage()]
    assert len(lines) == 1 and '20 unknown' in lines[0].getMessage()


def test_a_document_parsed_again_is_a_fresh_robot_and_a_bad_one_fails_again():
    from ne_dynamics_ros.dynamics.urdf_text import parse_urdf
    first = parse_urdf(str(UR5E_URDF))
    k = next(k for k, joint in enumerate(first.joints) if joint.limit is not None)
    first.joints[k].limit.effort = -1.0          # the caller's object: changed at will
    first.links.pop()
    again = parse_urdf(str(UR5E_URDF))
    assert again is not first and len(again.links) == len(first.links) + 1
    assert again.joints[k].limit.effort == 150.0 and load_model(str(UR5E_URDF)).n == 6
    bad = two_link().replace('<link name="base"/>', '<link name="base">')
    for _ in range(2):
        with pytest.raises(URDFError, match='malformed'):
            parse_urdf(bad)


def test_overflowing_states_raise_instead_of_returning_inf(ur5e):
    with pytest.raises(StateError, match='not finite in double precision'):
        ur5e.rnea(np.zeros(6), np.full(6, 1e200), np.zeros(6))
    assert np.all(np.isfinite(ur5e.rnea(np.zeros(6), np.full(6, 10.0), np.zeros(6))))


@pytest.mark.parametrize('xml, match', [
    (two_link(mass='abc'), '<link name="arm">/inertial/mass attribute value="abc": '
                           "'abc' is not a number"),
    (two_link(inertia='ixx="0.1" iyy="one" izz="0.1"'),
     '<link name="arm">/inertial/inertia attribute iyy="one"'),
    (two_link().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0"/>'),
     '<joint name="j1">/axis attribute xyz="0 0": expected 3 numbers, got 2'),
    (two_link().replace('velocity="1"', 'velocity="1,5"'),
     '<joint name="j1">/limit attribute velocity="1,5"'),
    (two_link(extra='<dynamics damping="0.1 0.2"/>'),
     '<joint name="j1">/dynamics attribute damping="0.1 0.2": expected 1 number'),
])
def test_a_bad_number_names_its_element_and_attribute(xml, match):
    with pytest.raises(URDFError) as info:
        load_model(xml)
    assert match in str(info.value)


PUMA_TEXT = (UR5E_URDF.parent / 'puma560.urdf').read_text()
NUMBER_SLOTS = [m for m in re.finditer(r'(\w+)="(-?[0-9][0-9.e+-]*(?: -?[0-9][0-9.e+-]*)*)"',
                                       PUMA_TEXT)]


@settings(max_examples=60, deadline=None)
@given(slot=st.integers(0, len(NUMBER_SLOTS) - 1),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                       st.text(max_size=12),
                       st.sampled_from(['1e308', '-1e308', '1e-320', '', ' ', '0x10', 'nan',
                                        '-inf', '1 2 3 4', '٣'])))
def test_any_number_of_the_puma_urdf_replaced_by_anything(slot, value):
    """The loader answers with a model or its own ValueError, never another exception;
    a model it answers with gives finite torques (or StateError) on a sane state."""
    match = NUMBER_SLOTS[slot]
    xml = PUMA_TEXT[:match.start(2)] + escape(value, {'"': '&quot;'}) + PUMA_TEXT[match.end(2):]
    try:
        model = load_model(xml)
    except ValueError as err:            # URDFError, InertiaError, ModelError
        assert isinstance(err, (URDFError, ModelError)), type(err)
        assert len(str(err)) < 2000
        return
    q = np.clip(np.zeros(model.n), model.lower_limits, model.upper_limits)
    try:
        tau = model.rnea(q, np.ones(model.n), np.ones(model.n))
    except StateError:
        return
    assert np.all(np.isfinite(tau))
