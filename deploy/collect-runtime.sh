#!/bin/bash
# Builds the runtime image's whole file tree in ROOT: the given binaries in /usr/local/bin, the
# shared libraries ldd says they load (and the dynamic loader) at their own paths, a non-root
# user, the directories Shipper writes to, the default config and the CA bundle. The Dockerfile
# copies ROOT into an empty (scratch) image; tests/deploy/image_root_test runs the binaries in
# it with chroot to prove nothing is missing.
#
#   deploy/collect-runtime.sh ROOT BINARY...
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 ROOT BINARY..." >&2
  exit 2
fi
root=$1
shift
here=$(dirname "$0")
uid=65532  # "nonroot", as distroless images number it

mkdir -p "$root/usr/local/bin"
for binary in "$@"; do
  install -m 0755 "$binary" "$root/usr/local/bin/"
  # "libx.so => /lib/.../libx.so (0x...)", and the loader as "/lib64/ld-linux-x86-64.so.2 (0x...)".
  ldd_out=$(ldd "$binary")
  if grep -q "not found" <<<"$ldd_out"; then
    echo "collect-runtime: $binary needs libraries that are not installed:" >&2
    grep "not found" <<<"$ldd_out" >&2
    exit 1
  fi
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$ldd_out" |
    while read -r lib; do
      # -L: the file itself under the name the loader asks for (no symlink chains to copy).
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
done

mkdir -p "$root/etc/shipper" "$root/etc/ssl/certs" "$root/var/run/shipper" "$root/var/lib/shipper" "$root/tmp"
echo "root:x:0:0:root:/:/nonexistent" >"$root/etc/passwd"
echo "nonroot:x:$uid:$uid:shipper:/nonexistent:/nonexistent" >>"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:%d:\n' "$uid" >"$root/etc/group"
chown "$uid:$uid" "$root/var/run/shipper" "$root/var/lib/shipper"
chmod 0750 "$root/var/run/shipper" "$root/var/lib/shipper"
chmod 1777 "$root/tmp"
install -m 0644 "$here/shipper.yml" "$root/etc/shipper/shipper.yml"
# TLS to the next Shipper or Redis verifies against the system's roots.
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi
