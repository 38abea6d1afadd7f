"""Every bad input raises a documented ValueError subclass naming the element or argument."""
import time

import numpy as np
import pytest

from conftest import UR5E_URDF
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
    with pytest.raises(URDFError, match='malformed|cannot read'):
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
    start = time.perf_counter()
    with pytest.raises(URDFError, match='DTD|entit'):
        load_model(lol)
    assert time.perf_counter() - start < 5.0   # generous: expansion would take minutes/GBs


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
