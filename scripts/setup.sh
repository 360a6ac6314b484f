#!/usr/bin/env bash
# Installs the Debian 12 packages aqueduct needs to build, test and benchmark (the list is
# scripts/debian-packages.txt), if any is missing. Safe to run again: it installs only what dpkg
# does not already have. `setup.sh --list` prints the list and exits.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$here/debian-packages.txt")
if [[ ${1:-} == --list ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} Debian packages present"
  exit 0
fi

echo "setup: ${#missing[@]} of ${#packages[@]} Debian packages missing, installing: ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
t0=$SECONDS
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: installed ${#missing[@]} packages (and their dependencies) in $((SECONDS - t0)) s"
