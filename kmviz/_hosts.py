"""Which listen addresses only this machine can reach (no Streamlit here: the CLI and the
app's ownership rules share it)."""

from __future__ import annotations

import ipaddress

#: Host names that resolve to the loopback interface on common systems.
LOOPBACK_NAMES = ("localhost", "localhost6", "ip6-localhost", "ip6-loopback",
                  "localhost.localdomain", "localhost6.localdomain6")


def is_loopback(host) -> bool:
    """True for a loopback address or name: ``127.0.0.1`` and all of 127.0.0.0/8, ``::1``
    in any spelling (``[::1]``, ``0:0:0:0:0:0:0:1``), IPv4-mapped ``::ffff:127.0.0.1``,
    ``localhost`` and its IPv6 names. An empty address (every interface) is not."""
    text = str(host or "").strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.split("%", 1)[0]            # an IPv6 zone (::1%lo)
    if not text:
        return False
    if text in LOOPBACK_NAMES or text.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))
