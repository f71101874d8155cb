#!/usr/bin/env bash
# qemu-run.sh QEMU:MACHINE ELF [SECONDS] - run one board image under QEMU
# (qemu-system-arm:mps2-an385, qemu-system-riscv32:virt) with semihosting,
# bounded by a timeout. The image's semihosting output comes out on stdout,
# and QEMU's exit code is the image's exit status (the port exits with
# SYS_EXIT_EXTENDED); a hang ends with timeout's 124.
set -u
qemu=${1%%:*} machine=${1#*:} elf=$2 secs=${3:-60}
extra=()
# RISC-V `virt` would start OpenSBI first; the image runs in machine mode itself.
[ "$qemu" = qemu-system-riscv32 ] && extra=(-bios none)
exec timeout -k 5 "$secs" "$qemu" -M "$machine" "${extra[@]}" -nographic -monitor none \
	-serial none -semihosting-config enable=on,target=native -kernel "$elf" 2>&1
