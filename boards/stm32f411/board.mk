# board.mk - stm32f411: STM32F411xE (Cortex-M4F, 512 KiB flash, 128 KiB RAM).
# Built and size-checked; QEMU has no model of it, so nothing runs.
stm32f411_CPU_FLAGS := -mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard
# The budget of one edgelock node (core + port/baremetal, small config):
# a quarter of the part's RAM and a sixteenth of its flash, leaving the rest
# to the application.
stm32f411_FLASH_BUDGET := 32768
stm32f411_RAM_BUDGET := 16384
# Main stack of one node's image, counted in its RAM: above the static worst
# case of common/stack-bound.sh (1,300 B: a floating-point exception frame).
stm32f411_STACK := 1280
stm32f411_QEMU :=
