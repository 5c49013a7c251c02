"""Money, energy and power: what owning or renting a GPU costs.

Power in watts, energy in kWh, money in US dollars, time in hours or days as each name says;
``utilization`` is the share of wall-clock time the machine runs at its rated power (0-1).
Explained in :doc:`/book/choosing_a_gpu` (section "Money: buying, running and renting").
"""
from __future__ import annotations

import numpy as np

from . import _checks

HOURS_PER_YEAR = 24.0 * 365.0
HOURS_PER_DAY = 24.0

#: Utilization presets from the GPU guide's cloud-versus-desktop section (Dettmers 2023):
#: a PhD student's desktop below 15%, a lab's Slurm cluster above 35%, a company cluster
#: above 60%; the guide adds that most personal machines run at 5-10%.
UTILIZATION = {"personal desktop (typical)": 0.075, "personal desktop (guide)": 0.15,
               "lab Slurm cluster": 0.35, "company cluster": 0.60}

#: The guide's worked example: a desktop with one RTX 3090 (350 W) and a 100 W CPU for $2,200,
#: electricity at $0.12/kWh, against an AWS on-demand V100 instance at $2.14/h, at 15%.
POST_DESKTOP = {"desktop_usd": 2200.0, "gpu_w": 350.0, "cpu_w": 100.0, "usd_per_kwh": 0.12,
                "cloud_usd_per_hour": 2.14, "utilization": 0.15, "days": 300.0}

#: The guide's cost-of-ownership assumptions for its performance-per-dollar chart:
#: $0.175/kWh, 15% utilization, 5 years.
POST_OWNERSHIP = {"usd_per_kwh": 0.175, "utilization": 0.15, "years": 5.0}


def _utilization(value):
    return _checks.in_range("utilization", value, 0.0, 1.0)


@_checks.finite_result
def energy_kwh(power_w, utilization, hours):
    """Energy drawn in kWh: ``power_w`` x ``utilization`` x ``hours`` / 1000.

    Explained in :doc:`/book/choosing_a_gpu` (section "Money: buying, running and renting").
    """
    power = _checks.non_negative("power_w", power_w)
    share = _utilization(utilization)
    hours = _checks.non_negative("hours", hours)
    return power * share * hours / 1000.0


@_checks.finite_result
def electricity_usd(power_w, utilization, years, usd_per_kwh):
    """Electricity bill in dollars for ``years`` of running at ``power_w`` for a share ``utilization`` of the time.

    Explained in :doc:`/book/choosing_a_gpu` (section "Money: buying, running and renting").
    """
    years = _checks.non_negative("years", years)
    price = _checks.non_negative("usd_per_kwh", usd_per_kwh)
    return energy_kwh(power_w, utilization, years) * HOURS_PER_YEAR * price


@_checks.finite_result
def ownership_usd(purchase_usd, power_w, utilization, years, usd_per_kwh):
    """Total cost of owning a machine in dollars: purchase price plus electricity over ``years``.

    Explained in :doc:`/book/choosing_a_gpu` (section "Money: buying, running and renting").
    """
    price = _checks.non_negative("purchase_usd", purchase_usd)
    return price + electricity_usd(power_w, utilization, years, usd_per_kwh)


@_checks.finite_result
def cloud_usd(usd_per_hour, utilization, days):
    """Cost in dollars of renting a cloud instance for the hours you would use a desktop over ``days``.

    ``usd_per_hour`` x ``utilization`` x 24 x ``days``: on-demand instances are paid only while they run.
    Explained in :doc:`/book/choosing_a_gpu` (section "Cloud or desktop?").
    """
    rate = _checks.non_negative("usd_per_hour", usd_per_hour)
    share = _utilization(utilization)
    days = _checks.non_negative("days", days)
    return rate * share * HOURS_PER_DAY * days


@_checks.finite_result
def desktop_usd(desktop_usd, power_w, utilization, days, usd_per_kwh):
    """Cost in dollars of a desktop after ``days``: its price plus the electricity of those days.

    Explained in :doc:`/book/choosing_a_gpu` (section "Cloud or desktop?").
    """
    price = _checks.non_negative("desktop_usd", desktop_usd)
    days = _checks.non_negative("days", days)
    return ownership_usd(price, power_w, utilization, days / 365.0, usd_per_kwh)


@_checks.finite_result
def breakeven_days(desktop_usd, power_w, usd_per_kwh, cloud_usd_per_hour, utilization):
    """Days after which a desktop has cost less than renting, in days.

    Solves price + power x u x 24 d x kWh-price / 1000 = hourly x u x 24 d for d. Raises
    ValueError where the cloud's hourly price does not exceed the desktop's hourly electricity
    (renting is then never dearer) or ``utilization`` is 0.
    Explained in :doc:`/book/choosing_a_gpu` (section "Cloud or desktop?").
    """
    price = _checks.non_negative("desktop_usd", desktop_usd)
    power = _checks.non_negative("power_w", power_w)
    kwh = _checks.non_negative("usd_per_kwh", usd_per_kwh)
    hourly = _checks.non_negative("cloud_usd_per_hour", cloud_usd_per_hour)
    share = _utilization(utilization)
    margin = (hourly - power * kwh / 1000.0) * share * HOURS_PER_DAY
    if np.any(margin <= 0):
        raise ValueError("cloud_usd_per_hour must exceed the desktop's electricity per hour "
                         "(power_w x usd_per_kwh / 1000) and utilization must be > 0: "
                         "otherwise renting never costs more")
    return price / margin


@_checks.finite_result
def system_power_w(gpus, gpu_w, cpu_w=150.0, other_w=50.0):
    """Power a multi-GPU machine can draw at full load, in watts: gpus x gpu_w + cpu_w + other_w.

    ``other_w`` covers the board, memory, disks and fans.
    Explained in :doc:`/book/choosing_a_gpu` (section "Power: the supply and the limit").
    """
    gpus = _checks.positive_int("gpus", gpus)
    gpu = _checks.non_negative("gpu_w", gpu_w)
    cpu = _checks.non_negative("cpu_w", cpu_w)
    other = _checks.non_negative("other_w", other_w)
    return gpus * gpu + cpu + other


@_checks.finite_result
def psu_headroom_w(psu_w, gpus, gpu_w):
    """Watts a power supply has left for everything but the GPUs: psu_w - gpus x gpu_w (may be negative).

    Explained in :doc:`/book/choosing_a_gpu` (section "Power: the supply and the limit").
    """
    psu = _checks.positive("psu_w", psu_w)
    gpus = _checks.positive_int("gpus", gpus)
    return psu - gpus * _checks.non_negative("gpu_w", gpu_w)


@_checks.finite_result
def energy_per_work_change(power_before_w, power_after_w, slowdown):
    """Relative change in energy per unit of work when a power limit cuts power and slows the GPU.

    Energy per item = power x time per item, so the ratio is (after / before) / (1 - slowdown)
    and the change that minus 1 (negative: the limit saves energy). ``slowdown`` is the measured
    fractional loss of speed, in [0, 1).
    Explained in :doc:`/book/choosing_a_gpu` (section "Power: the supply and the limit").
    """
    before = _checks.positive("power_before_w", power_before_w)
    after = _checks.positive("power_after_w", power_after_w)
    slow = _checks.in_range("slowdown", slowdown, 0.0, 1.0)
    if np.any(slow >= 1.0):
        raise ValueError("slowdown must be < 1 (a GPU that stops does no work)")
    return after / before / (1.0 - slow) - 1.0


@_checks.finite_result
def per_dollar(throughput, usd):
    """Throughput per 1,000 dollars: ``throughput`` x 1000 / ``usd`` (``usd`` > 0).

    Explained in :doc:`/book/choosing_a_gpu` (section "Money: buying, running and renting").
    """
    value = _checks.non_negative("throughput", throughput)
    return value * 1000.0 / _checks.positive("usd", usd)
