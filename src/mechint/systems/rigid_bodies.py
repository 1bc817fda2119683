r"""N rigid bodies in any potential: position, momentum, attitude and body angular momentum.

Source: T. Lee, M. Leok, N. H. McClamroch, *Lie group variational integrators for the
full body problem*, CMAME 196 (2007) 2907 (arXiv math/0508365), §2; docs/math.md §9.
Body b has mass m_b (its centre of mass at x_b, momentum p_b = m_b ẋ_b), attitude
R_b ∈ SO(3) (body → space), inertia tensor 𝕁_b about its centre of mass (in its body
frame) and body angular momentum Π_b = 𝕁_b Ω_b, Ṙ_b = R_b hat(Ω_b).  With a potential
V(x, R):

    ẋ_b = p_b / m_b,   ṗ_b = −∂V/∂x_b,   Ṙ_b = R_b hat(Ω_b),   Π̇_b = Π_b × Ω_b + M_b,

    H = Σ_b |p_b|²/(2 m_b) + Σ_b ½ Π_b·Ω_b + V(x, R).

**The body torque M.**  Let G_b = ∂V/∂R_b (the 3×3 matrix of partial derivatives with
respect to the entries of R_b, by automatic differentiation).  A rotation of body b by
η ∈ R³ in its own frame, R_b ↦ R_b exp(ε hat(η)), changes V at first order by
tr(G_bᵀ R_b hat(η)) ε; with B = G_bᵀR_b and tr(B hat(η)) = −η·vee(B − Bᵀ), the
virtual work −δV = η·M_b defines

    M_b = vee(G_bᵀ R_b − R_bᵀ G_b)        (LLM 2007, (8): S(M) = ∂U/∂Rᵀ R − Rᵀ ∂U/∂R).

For the heavy top, V = e_z·R χ gives G = e_z χᵀ, and M = vee(χγᵀ − γχᵀ) = γ × χ with
γ = Rᵀe_z: the heavy top's own torque.

**Structure.**  The bracket of T*(R³ × SO(3))ᴺ in the chart z = (x, p, vec R, Π)
(left-trivialised, ``poisson_tensor``): {x_b, p_b} = 𝟙, {R_ij, Π_l} = −Σ_k R_ik ε_kjl,
{Π_a, Π_b} = −ε_abc Π_c, zero otherwise: ż = B(z)∇H gives the equations above, and the
entries of R_bᵀR_b are its Casimirs (``orthogonality`` measures them).  A map is
symplectic on T*SO(3)ᴺ exactly when it is Poisson for B (``check``).

**Momenta.**  If V(x + a, R) = V(x, R) for every a (``translation_invariant``), the
total linear momentum P = Σ p_b is kept; if V(Qx, QR) = V(x, R) for every rotation Q
(``rotation_invariant``), the total spatial angular momentum L = Σ x_b × p_b + R_bΠ_b.
Each is listed among the invariants only when the user declares the symmetry, and the
declaration is verified at construction (the total force Σ ∂V/∂x_b, and the total
torque Σ x_b × F_b + R_b M_b, must vanish at generic states: the bodies on a lattice of
spacing 3, the same rotated and shifted, and both spread by 30 and by 1000, where V and
its gradient are finite), an ``InputError`` when it is false.  The check sees a
symmetry broken anywhere those states reach (a wall at |x| = 50 is seen); it cannot see
one broken only beyond them, or only at special configurations (two sites at one
distance), so a declaration stays the user's claim there.

**Time.**  With ``time_dependent=True`` the potential is V(t, x, R) (V(t, R) without
masses), on the extended phase space as for the canonical systems
(``systems.canonical``): the state ends with the time t (field "now") and its conjugate e, the
autonomous K = H + e generates ṫ = 1, ė = −∂V/∂t besides the equations above, and K is
the invariant ``H`` (e = −∫∂V/∂t dt, the energy the time dependence put in).  The drift
advances t and the kick e, so the splittings and the Lie group variational map (kick at
t_k, free step, kick at t_{k+1}) stay explicit and symplectic in the extended
variables; the declared symmetries are checked at t = 0.

**Inertia.**  Principal moments (N, 3), or tensors (N, 3, 3) that are diagonalised once
(𝕁 = A diag(I) Aᵀ, ``axes`` A ∈ SO(3)); the state stays in the frame the user gave.
The moments must obey the triangle inequality I_i ≤ I_j + I_k (every mass distribution
does; equality is a planar body, allowed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from mechint import maps
from mechint._pytree import register_pytree
from mechint._validate import shown, traced
from mechint.errors import InputError
from mechint.lie import orthonormalize, so3
from mechint.systems import joints as jointing
from mechint.systems import rigid_inputs
from mechint.systems.base import (
    BodiesInPotential,
    NaturalSplit,
    Parameter,
    PoissonSystem,
    PrincipalRotations,
    StateOption,
)
from mechint.systems.canonical import _parameters
from mechint.systems.flows import AxisRotation, BodyDrift, BodyKick
from mechint.systems.joints import Joint
from mechint.systems.rigid import bodies_tensor
from mechint.systems.rigid_inputs import (
    check_potential,
    inertia_rows,
    inertia_tensors,
    lead_shape,
    mass_array,
    potential_function,
    state_from_options,
)


@final
@register_pytree(
    data=("inertia", "axes", "mass", "params"),
    meta=(
        "potential",
        "translation_invariant",
        "rotation_invariant",
        "state_fields",
        "time_dependent",
        "joints",
    ),
)
@dataclasses.dataclass(frozen=True, eq=False, init=False, repr=False)
class RigidBodies(PoissonSystem, NaturalSplit, PrincipalRotations, BodiesInPotential):
    """N rigid bodies in a potential (see the module docstring).

    ``RigidBodies(inertia, mass=None, potential=V, params=None)``:

    - ``inertia``: principal moments (N, 3) or inertia tensors (N, 3, 3) about the
      centres of mass, in each body's frame; N = 1 allowed.
    - ``mass``: one per body (or one for all).  Then the state is ``(x, p, R, Pi)`` of
      shapes (N, 3), (N, 3), (N, 3, 3), (N, 3) and the potential is ``V(x, R)``
      (``V(x, R, params)``).  ``mass=None``: the centres are fixed (attitude only), the
      state is ``(R, Pi)`` and the potential ``V(R)`` (``V(R, params)``).
    - ``potential``: any JAX function of one state returning a scalar (None: V = 0),
      e.g. a sum of ``systems.potentials``; its forces and torques come from automatic
      differentiation.  ``params``: a pytree of arrays passed to it (leaves of the
      system: differentiable, and a new value reuses the compiled run).
    - ``translation_invariant`` / ``rotation_invariant``: declare V's symmetry (verified
      numerically): the total linear momentum P (``Px, Py, Pz``) / the total angular
      momentum L (``Lx, Ly, Lz``) are then invariants.  V = 0 has both.
    - ``time_dependent``: the potential is ``V(t, x, R)`` (``V(t, R)``), and the state
      ends with the time t (field "now") and its conjugate e (scalars; a state without them is
      extended with t = t0, e = 0): see the module docstring.

    A batch of states adds a leading axis to every array."""

    inertia: Float[Array, "n 3"]
    axes: Float[Array, "n 3 3"] | None
    mass: Float[Array, " n"] | None
    params: Any
    potential: Callable | None
    translation_invariant: bool
    rotation_invariant: bool
    time_dependent: bool
    joints: tuple[Joint, ...]

    name: ClassVar[str] = "rigid-bodies"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("inertia", "principal moments, a row I1,I2,I3 per body (or 9 numbers: the "
                  "tensor)", inertia_rows, example="1,1.5,2;2,2,3"),
        Parameter("mass", "one mass per body (or one for all); none: centres fixed"),
        Parameter("potential", 'V(x, R) (V(R) without masses): "package.module:function" '
                  "(imported, so run: trust it as code)",
                  lambda text: {"potential": text}, text=True,
                  example="mypotentials:gravity"),
        Parameter("params", "numbers passed to the potential as its third argument",
                  lambda v: {"params": v}),
        Parameter("translation_invariant", "true: V(x + a, R) = V(x, R) (P is kept)",
                  rigid_inputs.flag("translation_invariant"), text=True),
        Parameter("rotation_invariant", "true: V(Qx, QR) = V(x, R) (L is kept)",
                  rigid_inputs.flag("rotation_invariant"), text=True),
        Parameter("time_dependent", "true: the potential is V(t, x, R) (V(t, R))",
                  rigid_inputs.flag("time_dependent"), text=True),
        Parameter("joints", 'spherical joints "a:x,y,z:b:x,y,z;..." (body a\'s site held on '
                  "body b's, or on a ground point: b = ground)", rigid_inputs.joint_rows,
                  text=True, example="0:0,0,0.5:ground:0,0,0"),
    )  # fmt: skip
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("x0", "centres of mass, a row x,y,z per body (rigid-bodies with masses)"),
        StateOption("p0", "momenta, a row per body (rigid-bodies with masses; default 0)"),
        StateOption("R0", "attitudes, per body a row of 9 numbers (R row by row; a matrix "
                    "rounded to 1e-3 is re-orthogonalised, with a note), 4 (a quaternion "
                    "w,x,y,z) or 3 (yaw, pitch, roll in radians: R = Rz Ry Rx) "
                    "(default: the identity)"),
        StateOption("Pi0", "body angular momenta, a row per body"),
    )  # fmt: skip
    descriptions: ClassVar[dict[str, str]] = {
        "x": "centre of mass (space frame)",
        "p": "linear momentum (space frame)",
        "R": "attitude (body → space)",
        "Pi": "body angular momentum",
        "Px": "total linear momentum, x",
        "Py": "total linear momentum, y",
        "Pz": "total linear momentum, z",
        "Lx": "total angular momentum Σ x×p + RΠ, x",
        "Ly": "total angular momentum Σ x×p + RΠ, y",
        "Lz": "total angular momentum Σ x×p + RΠ, z",
        "trRtR": "Casimir Σ_b tr R_bᵀR_b (3N for rotations)",
        "now": "time (a time-dependent potential's extended phase space)",
        "e": "conjugate of the time: −∫∂V/∂t dt, so that H + e is kept",
        "constraints": "largest joint residual max |x_a + R_a s_a − x_b − R_b s_b|",
        "constraint_rates": "largest rate of a joint's residual (0 on the manifold)",
        "multipliers": "each joint's force λ: body a feels −λ at its site, body b +λ",
    }

    def __init__(
        self,
        inertia=((1.0, 1.5, 2.0),),
        mass=None,
        potential: Callable | str | None = None,
        params=None,
        *,
        translation_invariant: bool = False,
        rotation_invariant: bool = False,
        time_dependent: bool = False,
        joints=None,
    ):
        moments, axes = inertia_tensors(inertia)
        n = len(moments)
        masses = mass_array(mass, n)
        held = jointing.validate(joints, n, masses is not None)
        jointing.check_declarations(held, translation_invariant, rotation_invariant)
        potential = potential_function(potential)
        for flag, value in (
            ("translation_invariant", translation_invariant),
            ("rotation_invariant", rotation_invariant),
            ("time_dependent", time_dependent),
        ):
            if not isinstance(value, bool | np.bool_):
                raise InputError(flag, f"must be True or False, got {value!r}")
        if translation_invariant and masses is None:
            raise InputError(
                "translation_invariant",
                "the centres are fixed (mass=None): there is no linear momentum",
                "give the masses, or leave translation_invariant out",
            )
        params = _parameters(params)
        fields = (("R", ("body", "row", "col")), ("Pi", ("body", "axis")))
        if masses is not None:
            fields = (("x", ("body", "axis")), ("p", ("body", "axis")), *fields)
        if time_dependent:
            if potential is None:
                raise InputError(
                    "time_dependent", "there is no potential",
                    "give a potential V(t, x, R), or leave time_dependent out",
                )  # fmt: skip
            fields = (*fields, ("now", ()), ("e", ()))
        set_ = object.__setattr__
        set_(self, "inertia", jnp.asarray(moments))
        set_(self, "axes", None if axes is None else jnp.asarray(axes))
        set_(self, "mass", None if masses is None else jnp.asarray(masses))
        set_(self, "params", params)
        set_(self, "potential", potential)
        free = potential is None  # V = 0 has both symmetries, unless a joint breaks one
        grounded = [j for j in held if j.grounded]
        set_(self, "translation_invariant", bool(translation_invariant or (free and not grounded)))
        at_origin = not any(any(j.site_b) for j in grounded)
        set_(self, "rotation_invariant", bool(rotation_invariant or (free and at_origin)))
        set_(self, "joints", held)
        set_(self, "state_fields", fields)
        set_(self, "time_dependent", bool(time_dependent))
        if potential is not None:
            check_potential(self, bool(translation_invariant), bool(rotation_invariant))

    def __repr__(self) -> str:
        mass = "None" if self.mass is None else shown(self.mass)
        V = getattr(self.potential, "__name__", repr(self.potential))
        time = ", time_dependent=True" if self.time_dependent else ""
        joints = f", joints={len(self.joints)}" if self.joints else ""
        return (
            f"RigidBodies(N={self.bodies}, inertia={shown(self.inertia)}, mass={mass}, "
            f"potential={V}{time}{joints})"
        )

    # -- facts ---------------------------------------------------------------------------
    @property
    def bodies(self) -> int:
        """N, the number of bodies."""
        return self.inertia.shape[-2]

    @property
    def constrained(self) -> bool:  # type: ignore[override]
        """Whether joints hold the bodies (then only the maps that know them serve)."""
        return bool(self.joints)

    @property
    def multiplier_dims(self) -> tuple[str, ...] | None:
        """The dimensions of the joints' forces in a run's files (None without joints)."""
        return ("joint", "axis") if self.joints else None

    @property
    def translating(self) -> bool:
        """Whether the centres move (masses given): the state has x and p."""
        return self.mass is not None

    @property
    def quadratic_invariants(self) -> tuple[str, ...]:
        """The invariants quadratic (or linear) in (x, p, R, Π), kept by the implicit
        midpoint rule and the Gauss methods: the Casimir Σ tr RᵀR, the declared momenta
        P (linear) and L (bilinear), and H when there is no potential."""
        energy = ("H",) if self.potential is None else ()
        return (*energy, *self.momenta_names(), "trRtR")

    def momenta_names(self) -> tuple[str, ...]:
        """The names of the declared momenta among the invariants."""
        out = []
        if self.translating and self.translation_invariant:
            out += [f"P{c}" for c in "xyz"]
        if self.rotation_invariant:
            out += [f"L{c}" for c in "xyz"]
        return tuple(out)

    @property
    def momentum_maps(self) -> tuple[str, ...]:  # type: ignore[override]
        """The declared momenta (linear in the momenta: kept by the symplectic maps of the
        split, and carried with their impulses by ``Forced``)."""
        return self.momenta_names()

    @property
    def potential_free(self) -> bool:
        return self.potential is None

    @property
    def state_shape(self) -> tuple[int, ...]:
        return (self.bodies, 3)

    def parameters(self) -> dict:
        return rigid_inputs.parameters(self)

    # -- the state -----------------------------------------------------------------------
    def parts(self, x) -> tuple[Any, Any, Any, Any]:
        """(x, p, R, Π) of a state (x, p None when the centres are fixed)."""
        if self.time_dependent:
            x = x[:-2]
        if self.translating:
            pos, p, R, Pi = x
            return pos, p, R, Pi
        R, Pi = x
        return None, None, R, Pi

    def clock(self, x) -> tuple[Any, ...]:
        """(t, e) of a time-dependent system's state, () otherwise."""
        return tuple(x[-2:]) if self.time_dependent else ()

    def join(self, pos, p, R, Pi, clock=()):
        """The state of its parts (``parts``' inverse; ``clock``: (t, e) of a
        time-dependent system, ``clock(x)``)."""
        return (*((pos, p, R, Pi) if self.translating else (R, Pi)), *clock)

    def _time(self, x):
        """The time of one state (None for a time-independent system)."""
        return x[-2] if self.time_dependent else None

    def energy_potential(self, pos, R, t=None) -> Any:
        """V of one state (0 without a potential; at time t where time-dependent)."""
        if self.potential is None:
            return jnp.zeros((), R.dtype)
        args = (pos, R) if self.translating else (R,)
        if self.time_dependent:
            args = (jnp.zeros((), R.dtype) if t is None else t, *args)
        if self.params is not None:
            args = (*args, self.params)
        return self.potential(*args)

    def forces(self, pos, R, t=None) -> tuple[Any, Any]:
        """(−∂V/∂x (N, 3) or None, the body torques M (N, 3)) of one state (at time t)."""
        if self.potential is None:
            return (None if pos is None else jnp.zeros_like(pos)), jnp.zeros(R.shape[:-1], R.dtype)
        if self.translating:
            gx, G = jax.grad(self.energy_potential, argnums=(0, 1))(pos, R, t)
        else:
            gx, G = None, jax.grad(lambda R_: self.energy_potential(None, R_, t))(R)
        B = jnp.swapaxes(G, -1, -2) @ R
        return (None if gx is None else -gx), so3.vee(B - jnp.swapaxes(B, -1, -2))

    def time_force(self, pos, R, t) -> Any:
        """−∂V/∂t of one state: the rate of e."""
        return -jax.grad(lambda t_: self.energy_potential(pos, R, t_))(t)

    def principal_momentum(self, Pi) -> Any:
        """Π in the principal frame, Aᵀ Π."""
        return Pi if self.axes is None else jnp.einsum("...ji,...j->...i", self.axes, Pi)

    def angular_velocity(self, Pi) -> Any:
        """Ω = 𝕁⁻¹Π (body frame)."""
        w = self.principal_momentum(Pi) / self.inertia
        return w if self.axes is None else jnp.einsum("...ij,...j->...i", self.axes, w)

    # -- structure -----------------------------------------------------------------------
    def _one_field(self, x):
        field = self._free_field(x)
        if not self.joints:
            return field
        _, force, dR, dPi = self.parts(field)  # and the joints' forces −Kᵀλ (systems.joints)
        K = jointing.jacobian(self, self.parts(x)[2])
        force, dPi = jointing.impulse(self, force, dPi, K, jointing.multipliers(self, x, field))
        return self.join(self.parts(field)[0], force, dR, dPi, self.clock(field))

    def _free_field(self, x):
        """The field of one state without the joints' forces."""
        pos, p, R, Pi = self.parts(x)
        t = self._time(x)
        force, M = self.forces(pos, R, t)
        w = self.angular_velocity(Pi)
        dR = R @ so3.hat(w)
        dPi = jnp.cross(Pi, w) + M
        clock = () if t is None else (jnp.ones_like(t), self.time_force(pos, R, t))
        dpos = None if pos is None else p / jnp.asarray(self.mass)[:, None]
        return self.join(dpos, force, dR, dPi, clock)

    def _per_state(self, fn, x):
        """``fn`` of one state over the leading (batch, time) axes of ``x``."""
        lead = lead_shape(self.parts(x)[3], 2)
        for _ in lead:
            fn = jax.vmap(fn)
        return fn(x)

    def vector_field(self, x) -> Any:
        return self._per_state(self._one_field, x)

    def rotation_fields(self) -> tuple[str, ...]:
        return ("R",)

    def _one_energy(self, x):
        pos, p, R, Pi = self.parts(x)
        T = 0.5 * jnp.sum(self.principal_momentum(Pi) ** 2 / self.inertia)
        if self.translating:
            T = T + 0.5 * jnp.sum(jnp.sum(p * p, axis=-1) / jnp.asarray(self.mass))
        H = T + self.energy_potential(pos, R, self._time(x))
        return H + x[-1] if self.time_dependent else H

    def hamiltonian(self, x) -> Any:
        return self._per_state(self._one_energy, x)

    def casimirs(self, x) -> dict[str, Any]:
        """Σ_b tr R_bᵀR_b (= 3N: the attitudes are rotations), a function of the
        Casimirs R_bᵀR_b of the bracket (``orthogonality`` gives their largest error)."""
        R = self.parts(x)[2]
        return {"trRtR": jnp.sum(R * R, axis=(-3, -2, -1))}

    def orthogonality(self, x) -> Any:
        """max_b |R_bᵀR_b − 1| (max-norm) per state: zero for rotations."""
        R = self.parts(x)[2]
        D = jnp.swapaxes(R, -1, -2) @ R - jnp.eye(3, dtype=R.dtype)
        return jnp.max(jnp.abs(D), axis=(-3, -2, -1))

    def momenta(self, x) -> dict[str, Any]:
        """The total linear (P) and angular (L) momenta, those of declared symmetries."""
        pos, p, R, Pi = self.parts(x)
        out = {}
        if self.translating and self.translation_invariant:
            P = jnp.sum(p, axis=-2)
            out.update({f"P{c}": P[..., i] for i, c in enumerate("xyz")})
        if self.rotation_invariant:
            L = jnp.sum(jnp.einsum("...ij,...j->...i", R, Pi), axis=-2)
            if self.translating:
                L = L + jnp.sum(jnp.cross(pos, p), axis=-2)
            out.update({f"L{c}": L[..., i] for i, c in enumerate("xyz")})
        return out

    def invariants(self, x) -> dict[str, Any]:
        out = {"H": self.hamiltonian(x), **self.momenta(x), **self.casimirs(x)}
        if self.joints:
            g, _, g_dot, _ = self._per_state(partial(jointing.state_residuals, self), x)
            out["constraints"] = jnp.max(jnp.abs(g), axis=-1)
            out["constraint_rates"] = jnp.max(jnp.abs(g_dot), axis=-1)
        return out

    def invariant_scales(self, x) -> dict:
        """The joints' residuals are measured against the size of the terms they sum
        (``systems.joints.scales``)."""
        if not self.joints:
            return {}
        _, sg, _, sv = self._per_state(partial(jointing.state_residuals, self), x)
        return {"constraints": jnp.max(sg, axis=-1), "constraint_rates": jnp.max(sv, axis=-1)}

    def multipliers(self, x) -> Any:
        """λ (J, 3), the joints' forces, at states x on the joints' manifold (any leading
        axes): body a feels −λ_j at its site, body b +λ_j (``systems.joints``)."""

        def one(y):
            return jointing.multipliers(self, y, self._free_field(y)).reshape(-1, 3)

        return self._per_state(one, x)

    def project(self, x0) -> Any:
        """The state (or batch) ``x0`` moved onto the joints' manifold: the nearest
        positions (least mass-weighted change, to round-off), then the nearest momenta
        (``systems.joints.project``); NumPy arrays.  ``InputError`` where the joints cannot
        be met (``joints.projected_checked``)."""
        return jointing.projected_checked(self, self._validated(x0, "x0")[0])

    def split_invariants(self, x) -> dict:
        return {**self.momenta(x), **self.casimirs(x)}

    # -- coordinates and Poisson tensor ----------------------------------------------------
    def coordinates(self, x) -> Any:
        """z = (x, p, vec R, Π), each raveled over the bodies (x, p left out when the
        centres are fixed; then t, e where time-dependent)."""
        leaves = jax.tree.leaves(x)
        lead = lead_shape(self.parts(x)[3], 2)
        return jnp.concatenate([jnp.reshape(a, (*lead, -1)) for a in leaves], axis=-1)

    def from_coordinates(self, z):
        n, lead = self.bodies, z.shape[:-1]
        sizes: list[tuple[int, ...]] = [(n, 3), (n, 3), (n, 3, 3), (n, 3)]
        if not self.translating:
            sizes = sizes[2:]
        if self.time_dependent:
            sizes += [(), ()]
        out, start = [], 0
        for shape in sizes:
            size = int(np.prod(shape))
            out.append(z[..., start : start + size].reshape(*lead, *shape))
            start += size
        return tuple(out)

    def _one_tensor(self, x):
        _, _, R, Pi = self.parts(x)
        return bodies_tensor(R, Pi, self.translating, self.time_dependent)

    def poisson_tensor(self, x) -> Any:
        return self._per_state(self._one_tensor, x)

    # -- the split (splittings and the Lie group variational map) --------------------------
    def natural_split(self) -> tuple[maps.Integrator, ...]:
        """The exact flows of H's pieces: the potential's kick, the drift of the centres,
        and the three principal rotations of the free bodies.  (``RigidBodySplitting``
        takes the rotations composed into one, ``FreeRotation``, and the free motion
        around one whole kick.)"""
        rotations = (AxisRotation(0), AxisRotation(1), AxisRotation(2))
        if self.translating or self.time_dependent:  # the drift advances the time too
            return (BodyKick(), BodyDrift(), *rotations)
        return (BodyKick(), *rotations)

    def kick(self, x, t):
        def one(x):
            pos, p, R, Pi = self.parts(x)
            time = self._time(x)
            force, M = self.forces(pos, R, time)
            clock = self.clock(x)
            if self.time_dependent:
                clock = (time, clock[1] + t * self.time_force(pos, R, time))
            return self.join(pos, None if p is None else p + t * force, R, Pi + t * M, clock)

        return self._per_state(one, x)

    def drift(self, x, t):
        """x ← x + t p/m, and the time t ← t + t where time-dependent."""
        pos, p, R, Pi = self.parts(x)
        clock = self.clock(x)
        if self.time_dependent:
            clock = (clock[0] + t, clock[1])
        if not self.translating:
            return self.join(pos, p, R, Pi, clock) if clock else x
        return self.join(pos + t * p / jnp.asarray(self.mass)[..., :, None], p, R, Pi, clock)

    def principal_axes(self) -> Any:
        return self.axes

    def body_vectors(self, x) -> tuple[Any, ...]:
        """(Π, and the rows of R): each turns as Π does under a body rotation (ṙ = r × Ω
        for every row r of R), in the frame the user gave."""
        _, _, R, Pi = self.parts(x)
        return (Pi, R[..., 0, :], R[..., 1, :], R[..., 2, :])

    def from_body_vectors(self, x, vectors: tuple[Any, ...]) -> Any:
        """The state with these Π and rows of R.  R gets one Newton–Schulz step, which
        moves it by O(|RᵀR − 1|) only: the rounding of the rotations otherwise walks
        RᵀR away from 1 by ~1e-13 in 10⁵ steps."""
        pos, p, _, _ = self.parts(x)
        Pi, r0, r1, r2 = vectors
        R = orthonormalize(jnp.stack([r0, r1, r2], axis=-2))
        return self.join(pos, p, R, Pi, self.clock(x))

    # -- examples and validation ------------------------------------------------------------
    def example_state(self) -> Any:
        """Bodies on a cubic lattice of spacing 3 (seeded random momenta, attitudes and
        spins of moderate size), moved towards the joints where there are joints."""
        state = rigid_inputs.example_state(self)
        return jointing.projected_checked(self, state, reach=False) if self.joints else state

    def state_from_options(self, given: dict, frame=None) -> Any:
        """(x, p, R, Π) from --x0, --p0 (default 0), --R0 and --Pi0
        (``rigid_inputs.state_from_options``)."""
        return state_from_options(self, given)

    def _validated(self, x, name: str) -> tuple[tuple, bool]:
        """The state's arrays checked for shape and R for rotations (not the joints)."""
        return rigid_inputs.validated_state(self, x, name)

    def validate_state(self, x, name: str = "x0") -> tuple[tuple, bool]:
        state, batched = self._validated(x, name)
        if self.joints:  # on the joints' manifold, to round-off of the precision given
            given = [np.asarray(a).dtype for a in jax.tree.leaves(x) if hasattr(a, "dtype")]
            coarsest = max(given, key=lambda d: np.finfo(d).eps, default=np.dtype(float))
            jointing.check_state(self, state, name, coarsest)
        return state, batched

    def starting_state(self, x, t0):
        """A time-dependent system's state with its time set to the run's ``t0`` where
        it is still 0 (a state that carries its own time keeps it)."""
        if not self.time_dependent:
            return x
        t = x[-2]
        if traced((t, t0)):
            return (*x[:-2], jnp.where(t == 0, t0, t), x[-1])
        return (*x[:-2], np.where(t == 0, np.asarray(t0, dtype=np.float64), t), x[-1])
