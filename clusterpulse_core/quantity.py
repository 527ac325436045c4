"""Kubernetes quantities (docs/compatibility.md#q1, #q2).

Grammar (Kubernetes ``resource.Quantity``)::

    quantity ::= [+-] number ( exponent | suffix )?
    number   ::= digits | digits "." digits? | "." digits
    exponent ::= ("e" | "E") [+-] digits
    suffix   ::= n u m k M G T P E            (powers of 1000)
               | Ki Mi Gi Ti Pi Ei            (powers of 1024)

The value is computed exactly (fractions) and rounded once at the end. Invalid strings
give 0 from the ``parse_*`` helpers (as upstream); :func:`parse_quantity` raises instead.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_QUANTITY = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
_DECIMAL = {"n": -3, "u": -2, "m": -1, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
# Beyond this exponent no value is representable as a float64 or int64 anyway.
_MAX_EXPONENT = 400
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def parse_quantity(text: str) -> Fraction:
    """The exact value of a quantity string; ``ValueError`` when it is not one."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise ValueError(f"invalid quantity {text!r}")
    sign, number, exponent, suffix = match.groups()
    whole, _, fraction = number.partition(".")
    value = Fraction(int(whole or "0")) + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)
    if exponent is not None:
        power = int(exponent)
        if abs(power) > _MAX_EXPONENT:
            raise ValueError(f"quantity exponent out of range in {text!r}")
        value *= Fraction(10) ** power
    elif suffix in _DECIMAL:
        value *= Fraction(1000) ** _DECIMAL[suffix]
    elif suffix in _BINARY:
        value *= 1024 ** _BINARY[suffix]
    return -value if sign == "-" else value


def quantity_value(text: str) -> float:
    """The quantity in base units as a float, rounded once (Q2: ``"500m"`` -> 0.5); raises ValueError."""
    value = float(parse_quantity(text))
    if math.isinf(value):
        raise ValueError(f"quantity {text!r} is out of range")
    return value


def parse_cpu(text: str) -> float:
    """Cores (``"250m"`` -> 0.25, ``"2"`` -> 2.0); 0.0 for anything invalid."""
    if not text:
        return 0.0
    try:
        return quantity_value(text)
    except ValueError:
        return 0.0


def _round_up(value: Fraction) -> int:
    """Kubernetes ``Quantity.Value()``: whole units, rounding a fraction away from zero."""
    magnitude = math.ceil(abs(value))
    return -magnitude if value < 0 else magnitude


def parse_memory(text: str) -> int:
    """Whole bytes (``"1Gi"`` -> 1073741824, ``"1.5"`` -> 2), capped to int64; 0 when invalid."""
    if not text:
        return 0
    try:
        value = _round_up(parse_quantity(text))
    except ValueError:
        return 0
    return max(INT64_MIN, min(INT64_MAX, value))


def pods_value(text: str) -> int:
    """A pod-count quantity as an integer, rounded up; 0 when invalid."""
    return parse_memory(text)
