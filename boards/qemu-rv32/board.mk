# board.mk - qemu-rv32: QEMU's RISC-V `virt` machine with one RV32IMAC hart
# (ilp32), as ESP32-C3, GD32VF103 and CH32V parts are. Runs under
# `qemu-system-riscv32 -M virt -bios none`; mk/boards.mk reads these.
qemu-rv32_ARCH := riscv
qemu-rv32_CPU_FLAGS := -march=rv32imac -mabi=ilp32 -mcmodel=medany -msave-restore
# The budget of one edgelock node (core + port/baremetal, small config),
# the same as every board's.
qemu-rv32_FLASH_BUDGET := 32768
qemu-rv32_RAM_BUDGET := 16384
qemu-rv32_STACK := 1280
qemu-rv32_QEMU := virt
