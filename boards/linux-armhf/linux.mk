# linux.mk - linux-armhf: 32-bit ARM Linux boards with a hard-float ABI
# (Raspberry Pi 2/3 on a 32-bit OS, BeagleBone, i.MX6/7, STM32MP1). Debian's
# gcc-arm-linux-gnueabihf and libc6-dev-armhf-cross; run by qemu-arm.
linux-armhf_CC := arm-linux-gnueabihf-gcc
linux-armhf_QEMU := qemu-arm
linux-armhf_FLAGS := -O2
