"""The implicit half steps of the canonical maps, shared by symplectic Euler, Störmer–
Verlet and their forced (Lagrange–d'Alembert) forms in ``integrators.forced``: Newton on
one half step's equation (``implicit_half``), and the equations themselves.  Each
equation is a function of the unknown z and of ``args``, closing over no traced value
(``Newton.solve``)."""

from __future__ import annotations

from mechint.maps import Reason, status
from mechint.solvers import Newton


def implicit_half(solver: Newton, equation, guess, args):
    """Solve z = equation(z, args) by Newton from ``guess``; returns (z, StepStatus)."""
    z, st = solver.solve(lambda z, a: z - equation(z, a), guess, args)
    return z, status(st.converged, st.residual, Reason.NOT_CONVERGED)


def position_update(z, args):
    """q + h ∂H/∂p(z, p): symplectic Euler A's equation for q_{k+1} = z."""
    system, q, p, h = args
    return q + h * system.gradient(z, p)[1]


def momentum_update(z, args):
    """p − h ∂H/∂q(q, z): symplectic Euler B's equation for p_{k+1} = z."""
    system, q, p, h = args
    return p - h * system.gradient(q, z)[0]


def position_half(z, args):
    """q + (h/2)(∂H/∂p(q, p_{k+½}) + ∂H/∂p(z, p_{k+½})): Störmer–Verlet's equation for
    q_{k+1} = z."""
    system, q, half, h, v0 = args
    return q + (0.5 * h) * (v0 + system.gradient(z, half)[1])
