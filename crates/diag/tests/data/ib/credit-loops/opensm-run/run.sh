#!/bin/bash
# usage: run.sh <engine> <outdir> [extra opensm args]
set -u
eng=$1; out=$2; shift 2
SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
export IBSIM_SOCKNAME=diag_${eng}_$$
mkdir -p $out/cache
ibsim -s -n /work/shared/formats/ibsim-net/credit-loops.converted.net > $out/ibsim.log 2>&1 &
SP=$!
sleep 1
LD_PRELOAD=$SIM OSM_TMP_DIR=$out/ OSM_CACHE_DIR=$out/cache timeout 60 opensm -o -s 0 -R $eng -f $out/osm.log -D 0x43 "$@" > $out/opensm.out 2>&1
LD_PRELOAD=$SIM ibnetdiscover > $out/ibnetdiscover.topo 2>/dev/null
kill $SP
