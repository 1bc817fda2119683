r"""Rigid three-site water: a cluster of N molecules held rigid by 3N distance
constraints (``systems.Constrained``), for SETTLE (``integrators.Settle``) and RATTLE.

The state is (q, p) of shape (9N,): each molecule's oxygen, then its two hydrogens, in
Cartesian coordinates (nm) and momenta (amu nm/ps); energies are in kJ/mol, time in ps
(the units of OpenMM and GROMACS).  Each molecule keeps |O − H1| = |O − H2| = r_OH and
|H1 − H2| = r_HH.  The molecules interact by Coulomb's law between the sites of
different molecules and by Lennard-Jones between their oxygens, without cutoff (a
cluster in vacuum):

    V = Σ_{i<j, other molecules} k q_i q_j / r_ij + Σ_{O-O pairs} 4ε((σ/r)¹² − (σ/r)⁶),

k = 138.935457644 kJ mol⁻¹ nm e⁻² (1/(4πε₀), CODATA 2018, as OpenMM).  V depends on
distances only, so the total momentum P and the angular momentum L are declared
momentum maps (``Px`` … ``Lz``): RATTLE and SETTLE keep them.

``WATER_MODELS``: SPC/E (Berendsen, Grigera & Straatsma 1987) and TIP3P (Jorgensen et al.
1983), with the geometry, charges and oxygen Lennard-Jones parameters of OpenMM's
``spce.xml`` and ``tip3p.xml`` (σ, ε) and their masses (O 15.99943, H 1.007947).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar, NamedTuple, final

import jax.numpy as jnp
import numpy as np

from mechint._pytree import register_pytree
from mechint._validate import count, lookup
from mechint.errors import InputError
from mechint.systems.base import Parameter, StateOption
from mechint.systems.canonical import SeparableHamiltonian
from mechint.systems.constrained import Constrained

COULOMB = 138.935457644  # kJ mol⁻¹ nm e⁻²
# clusters in vacuum sum every pair of sites (no cutoff, no neighbour list): the pair
# tables grow as N³ (64 molecules: 3.5 million entries)
MOST_MOLECULES = 64


class WaterModel(NamedTuple):
    """A rigid three-site water model (nm, degrees, e, kJ/mol, amu)."""

    r_oh: float
    angle: float  # H-O-H, degrees
    charge_o: float
    charge_h: float
    sigma: float  # oxygen Lennard-Jones
    epsilon: float
    mass_o: float = 15.99943
    mass_h: float = 1.007947

    @property
    def r_hh(self) -> float:
        return 2.0 * self.r_oh * float(np.sin(np.radians(self.angle) / 2.0))

    def sites(self) -> np.ndarray:
        """(3, 3): O, H1, H2 about the centre of mass, the molecule in the x-y plane with
        its symmetry axis along y (O at +y)."""
        half = np.radians(self.angle) / 2.0
        h = self.r_oh * np.cos(half)
        x = np.array([[0.0, 0.0, 0.0], [-self.r_oh * np.sin(half), -h, 0.0],
                      [self.r_oh * np.sin(half), -h, 0.0]])  # fmt: skip
        m = np.array([self.mass_o, self.mass_h, self.mass_h])
        return x - m @ x / m.sum()


WATER_MODELS = {
    "spce": WaterModel(0.1, 109.47, -0.8476, 0.4238, 0.31657195050398818, 0.6497752),
    "tip3p": WaterModel(0.09572, 104.52, -0.834, 0.417, 0.31507524065751241, 0.635968),
}


def _one(name: str, values):
    """The one number of an option (``InputError`` for none or several)."""
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size != 1:
        raise InputError(name, f"expected one number, got {arr.size}")
    return float(arr[0])


def _kinetic(p, params):
    return 0.5 * jnp.sum(p.reshape(-1, 3) ** 2 / params["masses"][:, None])


@functools.lru_cache(maxsize=64)
def _pairs(sites: int) -> tuple[np.ndarray, ...]:
    """For the site pairs i < j in different molecules: the one-hot rows of i and of j
    (pairs × sites), and the differences of those of the oxygen pairs.  Pair vectors are
    then products (x_i − x_j = (E_i − E_j) x), whose derivatives are products too: a
    batch of clusters vectorises them, where gathers' derivatives (scatters) do not."""
    i, j = np.triu_indices(sites, 1)
    other = i // 3 != j // 3
    i, j = i[other], j[other]
    oxygen = (i % 3 == 0) & (j % 3 == 0)
    E = np.eye(sites)
    return E[i], E[j], E[i[oxygen]] - E[j[oxygen]]


def _potential(q, params):
    """Coulomb between the sites of different molecules, Lennard-Jones between their
    oxygens (no cutoff), over the list of pairs."""
    x = q.reshape(-1, 3)
    Ei, Ej, Do = (jnp.asarray(a, x.dtype) for a in _pairs(x.shape[0]))
    d = (Ei - Ej) @ x
    charges = params["charges"]
    products = (Ei @ charges) * (Ej @ charges)
    coulomb = COULOMB * jnp.sum(products / jnp.sqrt(jnp.sum(d * d, axis=-1)))
    do = Do @ x
    s6 = (params["sigma"] ** 2 / jnp.sum(do * do, axis=-1)) ** 3
    return coulomb + jnp.sum(4.0 * params["epsilon"] * (s6 * s6 - s6))


def _bonds(q, params):
    """|O − H1|² − r_OH², |O − H2|² − r_OH², |H1 − H2|² − r_HH², molecule by molecule."""
    x = q.reshape(-1, 3, 3)
    o, h1, h2 = x[:, 0], x[:, 1], x[:, 2]

    def sq(a, b):
        return jnp.sum((a - b) ** 2, axis=-1)

    r_oh2, r_hh2 = params["r_oh"] ** 2, params["r_hh"] ** 2
    return jnp.stack([sq(o, h1) - r_oh2, sq(o, h2) - r_oh2, sq(h1, h2) - r_hh2], axis=1).reshape(-1)


def _momentum(axis: int):
    def P(q, p):
        return jnp.sum(p.reshape(-1, 3)[:, axis])

    return P


def _angular(axis: int):
    i, j = [(1, 2), (2, 0), (0, 1)][axis]

    def L(q, p):
        x, y = q.reshape(-1, 3), p.reshape(-1, 3)
        return jnp.sum(x[:, i] * y[:, j] - x[:, j] * y[:, i])

    return L


_MOMENTA = {**{f"P{a}": _momentum(k) for k, a in enumerate("xyz")},
            **{f"L{a}": _angular(k) for k, a in enumerate("xyz")}}  # fmt: skip


@final
@register_pytree(data=("system", "params"), meta=("g", "m", "momenta", "dof", "model"))
@dataclasses.dataclass(frozen=True, eq=False, init=False)
class RigidWater(Constrained):
    """N rigid water molecules of ``model`` ("spce" or "tip3p") interacting in vacuum
    (the module docstring)."""

    model: str = "tip3p"

    name: ClassVar[str] = "rigid-water"
    full_rank: ClassVar[bool] = True  # each molecule a triangle that is never flat
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter(
            "molecules",
            "rigid-water: the number of molecules N",
            lambda v: {"molecules": _one("molecules", v)},
            required=True,
            example="8",
        ),
        Parameter(
            "model",
            "rigid-water: spce or tip3p (default tip3p)",
            lambda text: {"model": str(text).strip()},
            text=True,
        ),
    )
    state_options: ClassVar[tuple[StateOption, ...]] = (
        StateOption("q0", "initial positions q (canonical systems): comma-separated"),
        StateOption("p0", "initial momenta p (canonical systems): comma-separated"),
    )

    def __init__(self, molecules: int = 8, model: str = "tip3p"):
        n = count("molecules", molecules)
        if n > MOST_MOLECULES:
            raise InputError("molecules", f"at most {MOST_MOLECULES}, got {n}",
                             "every pair of sites is summed (no cutoff): run fewer")  # fmt: skip
        water = lookup("model", WATER_MODELS, model)
        masses = np.tile([water.mass_o, water.mass_h, water.mass_h], n)
        charges = np.tile([water.charge_o, water.charge_h, water.charge_h], n)
        params = {
            "masses": masses,
            "charges": charges,
            "sigma": np.float64(water.sigma),
            "epsilon": np.float64(water.epsilon),
        }
        base = SeparableHamiltonian(_kinetic, _potential, dof=9 * n, params=params)
        object.__setattr__(self, "model", str(model))
        geometry = {"r_oh": np.float64(water.r_oh), "r_hh": np.float64(water.r_hh)}
        super().__init__(base, _bonds, params=geometry, momenta=dict(_MOMENTA))

    @property
    def molecules(self) -> int:
        return self.dof // 9

    @property
    def keeps_energy(self) -> bool:
        """One molecule is a free rigid body: RATTLE and SETTLE keep its H (the
        Moser–Veselov map; 3.4e-12 over 10⁵ steps of 0.1 ps at 30 K)."""
        return self.molecules == 1

    @property
    def water(self) -> WaterModel:
        return WATER_MODELS[self.model]

    def __repr__(self) -> str:
        return f"RigidWater({self.molecules} molecules, model={self.model!r})"

    def parameters(self) -> dict:
        return {"molecules": self.molecules, "model": self.model}

    def dimension_labels(self) -> dict[str, list[str]]:
        return {"dof": [f"{site}{k + 1}_{a}" for k in range(self.molecules)
                        for site in ("O", "H1", "H2") for a in "xyz"]}  # fmt: skip

    def cluster(self, spacing: float = 0.31, temperature: float = 300.0, seed: int = 0):
        """A state: the molecules on a cubic lattice of ``spacing`` nm (the smallest cube
        that holds them), each turned at random, with Maxwell–Boltzmann velocities at
        ``temperature`` K (without the cluster's total momentum), on the manifold."""
        if not (np.isfinite(spacing) and spacing > 0):
            raise InputError("spacing", f"must be > 0 nm, got {spacing!r}")
        if not (np.isfinite(temperature) and temperature >= 0):
            raise InputError("temperature", f"must be >= 0 K, got {temperature!r}")
        rng = np.random.default_rng(seed)
        n = self.molecules
        side = int(np.ceil(n ** (1 / 3) - 1e-9))
        cells = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
        sites = self.water.sites()
        q = []
        for k in range(n):
            Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
            Q = Q * np.sign(np.diag(R))
            q.append(spacing * cells[k] + sites @ Q.T)
        q = np.concatenate(q).reshape(-1)
        masses = np.tile([self.water.mass_o, self.water.mass_h, self.water.mass_h], n)
        kT = 0.0083144626 * temperature  # kJ/mol
        v = rng.standard_normal((3 * n, 3)) * np.sqrt(kT / masses)[:, None]
        p = masses[:, None] * v
        p -= masses[:, None] * (p.sum(axis=0) / masses.sum())
        return self.project((q, p.reshape(-1)))

    def example_state(self):
        return self.cluster()


def _preset(molecules: int, model: str):
    def make():
        system = RigidWater(molecules, model)
        return system, system.cluster()

    return make


RigidWater.presets = {"cluster-8": _preset(8, "tip3p"), "spce-8": _preset(8, "spce"),
                      "cluster-27": _preset(27, "tip3p")}  # fmt: skip
