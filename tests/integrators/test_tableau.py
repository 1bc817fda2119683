import numpy as np
import pytest

from mechint.integrators import tableau


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
