# board.mk - mps2-an385: ARM MPS2 with the AN385 FPGA image (Cortex-M3).
# Runs under `qemu-system-arm -M mps2-an385`; mk/boards.mk reads these.
mps2-an385_CPU_FLAGS := -mcpu=cortex-m3 -mthumb -mfloat-abi=soft
# The budget of one edgelock node (core + port/baremetal, small config),
# not the part's memory (4 MiB + 4 MiB of ZBT SSRAM).
mps2-an385_FLASH_BUDGET := 32768
mps2-an385_RAM_BUDGET := 16384
# Main stack reserved for one node's image, counted in its RAM: above the
# static worst case of common/stack-bound.sh (1,220 B, checked by `make size`)
# and the deepest use measured under QEMU (944 B, tests/target/check-harness.sh).
mps2-an385_STACK := 1280
# QEMU machine that runs this board's images (empty: build only).
mps2-an385_QEMU := mps2-an385
