"""rtlab's real-kernel lab: Debian kernels booted under QEMU, scenarios run in them."""
