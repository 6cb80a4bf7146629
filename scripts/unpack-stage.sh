#!/usr/bin/env bash
# Unpacks the packed stages .gpu/NAME.tar.xz into /tmp/NAME, once each, on the GPU machine: the
# results folders' run.sh scripts start with it. A stage is packed here, after
# scripts/stage-gpu.sh stage-NAME, with
#   tar cf - -C stage-NAME run.sh bin | xz -T2 --lzma2=preset=1,dict=1GiB > .gpu/NAME.tar.xz
# (a 490 MB stage packs to about 14 MB in half a minute), and .gpu is carried to the machine.
# Results folders before panel32-v2-h200 call it as .gpu/prep.sh, an uncommitted copy.
#
#   scripts/unpack-stage.sh base new   # then /tmp/base/run.sh cholesky ...
set -euo pipefail
for name in "$@"; do
    [ -x "/tmp/$name/run.sh" ] && continue
    mkdir -p "/tmp/$name"
    xz -dc -T0 ".gpu/$name.tar.xz" | tar xf - -C "/tmp/$name"
done
