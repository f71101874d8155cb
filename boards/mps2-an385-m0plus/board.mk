# board.mk - mps2-an385-m0plus: Armv6-M (Cortex-M0+) code on QEMU's
# mps2-an385 model, which has no M0+. The image is built for the M0+
# (-mcpu=cortex-m0plus: no Thumb-2, no hardware divide) and its reset code
# switches on unaligned-access trapping (CCR.UNALIGN_TRP), so it faults where
# a real M0+ would. It runs the core's target suites as M0+ code in
# `make test`; boards/rp2040 is the M0+ part a fleet buys.
mps2-an385-m0plus_CPU_FLAGS := -mcpu=cortex-m0plus -mthumb -mfloat-abi=soft
mps2-an385-m0plus_FLASH_BUDGET := 32768
mps2-an385-m0plus_RAM_BUDGET := 16384
mps2-an385-m0plus_STACK := 1280
mps2-an385-m0plus_QEMU := mps2-an385
