"""NVIDIA GPUs as the kernel's PCI bus lists them, read from /sys/bus/pci/devices under --root.

A GPU the PCI bus still lists but NVML no longer does is the classic aftermath of Xid 79 ("fallen off the
bus"). The files' formats are the kernel's (drivers/pci/pci-sysfs.c): `vendor` "0x%04x", `class` "0x%06x".
"""

from __future__ import annotations

from pathlib import Path

NVIDIA_VENDOR = "0x10de"
# PCI base class 03 (display): 0x0300 VGA (GeForce / workstation boards), 0x0302 3D controller (data centre)
GPU_CLASSES = ("0x0300", "0x0302")


def nvidia_gpus(root: Path) -> tuple[str, ...] | None:
    """The PCI addresses (domain:bus:device.function, lower case) of NVIDIA GPUs; None where /sys is not
    readable here (then nothing is judged)."""
    devices = root / "sys/bus/pci/devices"
    try:
        entries = sorted(devices.iterdir())
    except OSError:
        return None
    found = []
    for entry in entries:
        try:
            vendor = (entry / "vendor").read_text().strip().lower()
            klass = (entry / "class").read_text().strip().lower()
        except OSError:
            continue
        if vendor == NVIDIA_VENDOR and klass[:6] in GPU_CLASSES:
            found.append(entry.name.lower())
    return tuple(found)


def same_address(nvml_bus_id: str) -> str:
    """NVML's bus id (`00000000:8D:00.0`, a 32-bit domain) in sysfs's spelling (`0000:8d:00.0`)."""
    return nvml_bus_id.strip().lower()[-12:]
