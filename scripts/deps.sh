#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs the Debian 12 packages OpenMRC builds with, if any is missing.
# Uses sudo when not run as root. Safe to run repeatedly.
set -euo pipefail

pkgs=(
  cmake ninja-build g++ pkg-config make  # make: the install test builds consumers with a plain makefile
  python3                    # the study scripts and their quick tests read mrc-sim's JSON
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  clang libclang-rt-14-dev   # libFuzzer targets and their bounded run
  libibverbs-dev             # verbs types (ibv_send_wr, ibv_wc, ...) for the OCP C API
  libisal-dev                # ISA-L's PCLMULQDQ CRC-32 for the ICRC (MRC_WITH_ISAL)
  liburing-dev               # the software device's io_uring send path (MRC_WITH_URING)
  libssl-dev                 # OpenSSL's libcrypto: AES-GCM of secure QPs (src/crypto)
  iproute2 ethtool nftables iputils-ping  # tools/fabric and its test (namespace Clos)
  tshark                     # tests/wireshark: tools/wireshark/mrc.lua under Debian's tshark
  libopenmpi-dev openmpi-bin # mrc-sim's ranks across processes (MRC_WITH_MPI; mpirun)
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# wireshark-common (pulled in by tshark) asks whether non-root users may
# capture; answer no beforehand so the install never waits for a person.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
