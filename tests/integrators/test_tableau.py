import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mechint as mi
from mechint.integrators import tableau
from mechint.integrators.explicit_rk import ExplicitRungeKutta
from mechint.maps import Traits, to_columns


@pytest.mark.parametrize("table", [tableau.EULER, tableau.RK4])
def test_shipped_tableaus_satisfy_their_order_conditions(table):
    defects = table.order_defects()
    for order in range(1, table.order + 1):
        assert defects[order] < 1e-15
    if table.order < 4:
        assert defects[table.order + 1] > 1e-3  # and not the next order


def test_rk4_nodes():
    assert np.allclose(tableau.RK4.c, [0, 0.5, 0.5, 1])


def test_inconsistent_tableau_is_rejected():
    with pytest.raises(ValueError, match="order conditions"):
        tableau.ButcherTableau(a=((0.0, 0.0), (0.5, 0.0)), b=(0.4, 0.6), order=2)
    with pytest.raises(ValueError, match="strictly lower"):
        tableau.ButcherTableau(a=((0.5,),), b=(1.0,), order=1)


def test_rk_step_on_columns_is_the_step_and_a_subclass_keeps_its_own():
    """``ExplicitRungeKutta.step_columns`` (a GPU batch's step, the stages' sums on the
    columns) gives ``step``'s bits member by member; a subclass that overrides ``step``
    (here: the new state renormalised) is stepped by its own ``step`` on columns too."""

    @dataclasses.dataclass(frozen=True)
    class Normalised(ExplicitRungeKutta):
        name: ClassVar[str] = "normalised-rk4"
        tableau: ClassVar = mi.integrators.RK4.tableau
        traits = Traits(order=4, symmetric=False, explicit=True)

        def step(self, system, x, h):
            y, st = super().step(system, x, h)
            return y / jnp.linalg.norm(y), st

    top = mi.systems.EulerTop((2.0, 1.0, 0.6667))
    x = np.random.default_rng(3).standard_normal((5, 3))
    for integrator in (mi.integrators.RK4(), Normalised()):
        want = jax.jit(jax.vmap(integrator.step, in_axes=(None, 0, None)))(top, x, 0.1)[0]
        got = jax.jit(lambda x, i=integrator: i.step_columns(top, to_columns(x), x, 0.1)[0])(x)
        assert all(np.array_equal(g, w) for g, w in zip(got, to_columns(want), strict=True))
