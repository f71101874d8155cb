#!/usr/bin/env bash
# qemu-run.sh MACHINE ELF [SECONDS] - run one Cortex-M image under QEMU with
# semihosting, bounded by a timeout. The image's semihosting output comes out
# on stdout, and QEMU's exit code is the image's exit status (the port exits
# with SYS_EXIT_EXTENDED); a hang ends with timeout's 124.
set -u
machine=$1 elf=$2 secs=${3:-60}
exec timeout -k 5 "$secs" qemu-system-arm -M "$machine" -nographic -monitor none \
	-serial none -semihosting-config enable=on,target=native -kernel "$elf" 2>&1
