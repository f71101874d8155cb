# linux.mk - linux-armhf: 32-bit ARM Linux boards with a hard-float ABI
# (Raspberry Pi 2/3 on a 32-bit OS, BeagleBone, i.MX6/7, STM32MP1). Debian's
# gcc-arm-linux-gnueabihf and libc6-dev-armhf-cross; run by qemu-arm.
linux-armhf_CC := arm-linux-gnueabihf-gcc
linux-armhf_QEMU := qemu-arm
linux-armhf_FLAGS := -O2
# edgelockd, the CLI and libedgelock too. apt here cannot add armhf (its
# bookworm-security index fails to download), so the libraries come from
# Debian's armhf packages unpacked into build/linux-armhf/sysroot
# (tools/deb-sysroot.sh): the -dev packages, their libraries, and every
# library those link to beyond libc.
linux-armhf_DAEMON := yes
linux-armhf_AR := arm-linux-gnueabihf-ar
linux-armhf_DEB_ARCH := armhf
linux-armhf_SYSROOT_PKGS := libmbedtls-dev libmbedtls14 libmbedx509-1 \
	libmbedcrypto7 libinih-dev libinih1
