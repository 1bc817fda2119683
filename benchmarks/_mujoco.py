"""MuJoCo models shared by the benchmark scripts (not a benchmark itself)."""

from __future__ import annotations


def ball_chain(h: float, integrator: str, gravity: float, links):
    """(model, data) of a chain of bodies on ball joints hanging from the world's origin,
    no contacts, damping or armature, with the energy computed: ``links`` is one
    (offset from the parent's frame, ``<inertial>`` attributes, ``<geom>`` attributes)
    per body, each body's frame at its joint."""
    import mujoco

    body = ""
    for i, (offset, inertial, geom) in enumerate(links):
        body += (f'<body name="b{i}" pos="{offset}"><joint type="ball" damping="0" armature="0"/>'
                 f"<inertial {inertial}/>"
                 f'<geom {geom} mass="0" contype="0" conaffinity="0"/>')  # fmt: skip
    body += "</body>" * len(links)
    xml = (f'<mujoco><option timestep="{h}" integrator="{integrator}" gravity="0 0 {-gravity}">'
           '<flag energy="enable" contact="disable"/></option>'
           f"<worldbody>{body}</worldbody></mujoco>")  # fmt: skip
    model = mujoco.MjModel.from_xml_string(xml)
    return model, mujoco.MjData(model)
