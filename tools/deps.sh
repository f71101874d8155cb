#!/usr/bin/env bash
# deps.sh [LIST] - install the Debian packages of LIST (default
# tools/debian-packages.txt; `make bench-compare` passes
# tools/bench-packages.txt) that are missing (with sudo when not root).
# Quiet when everything is there.
#
# A line `pkg:ARCH` names a package of a foreign architecture (multiarch, e.g.
# the arm64 libraries the linux-arm64 board links): the architecture is added
# to dpkg only when such a package is missing and dpkg does not know it yet.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
native=$(dpkg --print-architecture)
missing=() add_archs=()
while read -r pkg; do
	case "$pkg" in ""|\#*) continue ;; esac
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$pkg")
		arch=${pkg#*:}
		if [ "$arch" != "$pkg" ] && [ "$arch" != "$native" ] &&
			! dpkg --print-foreign-architectures | grep -qx "$arch"; then
			add_archs+=("$arch")
		fi
	fi
done <"${1:-$here/debian-packages.txt}"
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
for arch in $(printf '%s\n' ${add_archs[@]+"${add_archs[@]}"} | sort -u); do
	echo "deps: adding the $arch architecture to dpkg"
	$sudo dpkg --add-architecture "$arch"
done
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
