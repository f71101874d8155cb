# linux.mk - linux-arm64: 64-bit ARM Linux gateways and boards (Raspberry Pi
# 4/5 and CM4 on a 64-bit OS, NXP i.MX8, Rockchip RK35xx). Debian's
# gcc-aarch64-linux-gnu and libc6-dev-arm64-cross; run by qemu-aarch64.
linux-arm64_CC := aarch64-linux-gnu-gcc
linux-arm64_QEMU := qemu-aarch64
linux-arm64_FLAGS := -O2
# edgelockd, the CLI and libedgelock too, against Debian's arm64 multiarch
# libmbedtls and libinih (tools/debian-packages.txt).
linux-arm64_DAEMON := yes
linux-arm64_AR := aarch64-linux-gnu-ar
