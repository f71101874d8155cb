# board.mk - rp2040: Raspberry Pi RP2040 (dual Cortex-M0+, Armv6-M; one core
# runs the node). Built and size-checked here; its code runs in `make test`
# as the mps2-an385-m0plus pseudo-board (the same Armv6-M code on QEMU's
# AN385 model with unaligned trapping on, which is how an M0+ behaves).
rp2040_CPU_FLAGS := -mcpu=cortex-m0plus -mthumb -mfloat-abi=soft
# The budget of one edgelock node (core + port/baremetal, small config), the
# same as every board's.
rp2040_FLASH_BUDGET := 32768
rp2040_RAM_BUDGET := 16384
rp2040_STACK := 1280
rp2040_QEMU :=
