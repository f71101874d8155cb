#!/usr/bin/env bash
# deb-sysroot.sh ARCH DIR PKG... - unpack Debian's PKGs of architecture ARCH
# into DIR, a sysroot to cross-link against, without touching the system's
# apt or dpkg: apt-get runs on a private state in DIR/.apt that knows only the
# release's main suite for ARCH (signed by Debian's archive keyring).
#
# Why not multiarch (dpkg --add-architecture, as linux-arm64 does): for armhf
# this machine's mirror serves a bookworm-security index that fails its
# checksum, which breaks `apt-get update` for everyone. apt-get download
# resolves no dependencies: the caller lists every library the link needs.
set -eu
arch=$1 dir=$2; shift 2
# shellcheck source=/dev/null
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
rm -rf "$dir" && mkdir -p "$dir"
dir=$(cd "$dir" && pwd) # apt resolves its paths from its own working directory
state=$dir/.apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
	"http://deb.debian.org/debian $suite main" >"$state/sources.list"
touch "$state/status"
apt=(apt-get -q -o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/nonexistent
	-o "Dir::State::Lists=$state/lists" -o "Dir::State::status=$state/status"
	-o "Dir::Cache=$state/cache" -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch"
	-o APT::Sandbox::User=root)
"${apt[@]}" update >"$state/update.log" 2>&1 || { cat "$state/update.log"; exit 1; }
(cd "$state/debs" && "${apt[@]}" download "$@" >"$state/download.log" 2>&1) ||
	{ cat "$state/download.log"; exit 1; }
for deb in "$state"/debs/*.deb; do
	dpkg-deb -x "$deb" "$dir"
done
