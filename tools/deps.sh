#!/usr/bin/env bash
# deps.sh [LIST] - install the Debian packages of LIST (default
# tools/debian-packages.txt; `make bench-compare` passes
# tools/bench-packages.txt) that are missing (with sudo when not root).
# Quiet when everything is there.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
missing=()
while read -r pkg; do
	case "$pkg" in ""|\#*) continue ;; esac
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$pkg")
	fi
done <"${1:-$here/debian-packages.txt}"
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
