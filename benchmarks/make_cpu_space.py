"""Brute-force a small CPU tuning space here and save it in Kernel Tuner cache format.

Two kernels (`--kernel`), both spaces no forge strategy was designed on:

`matmul` (default, spaces/cpu_blocked_matmul.json.gz): a blocked single-precision matmul C = A @ B (N=256)
in C, compiled once with gcc -O2, with the tiling as runtime parameters: block sizes MB, NB, KB,
the loop order of the three block loops, and the inner-loop unroll of the k loop. A config whose
tiles' working set exceeds 512 KiB would be left out (infeasible, as a constraint rejects it) —
with the value lists below none does, so all 2,592 points are measured; every one is timed
(median of 3 runs, after a warm-up) on this machine's CPU.

    .venv/bin/python benchmarks/make_cpu_space.py [out.json.gz]

`conv2d` (spaces/cpu_conv2d.json.gz, made for the second search pass and held out from every
design decision of it): a direct 5x5 fp32 convolution of a 512x512 image in C, gcc -O2, with
runtime tiling TX x TY, tile traversal order, three loop-nest variants (pixel-outer with a
register accumulator / filter-tap-outer streaming whole rows / filter-row-outer) and the input's
row padding (0, 1, 16 floats: power-of-two strides alias in the cache). A tile of more than
8192 output pixels is left out (infeasible), as a scratch-size constraint would reject it.

    .venv/bin/python benchmarks/make_cpu_space.py --kernel conv2d [out.json.gz]

The machine is shared, so times carry noise; the file is a real measured space all the same.
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import json
import subprocess
import tempfile
import time
from pathlib import Path


def timing_main(init: str, params: str) -> str:
    """The C `main` both kernels share: fill the inputs, then for every line of parameters on
    stdin run once (warm-up) and three timed times, and print the three times (ms) sorted."""
    names = params.split()
    args = ",".join(names)
    fmt, refs = " ".join(["%d"] * len(names)), ",".join(f"&{n}" for n in names)
    return (f"int main(void){{\n  {init}\n  int {args};\n"
            f"  while(scanf(\"{fmt}\",{refs})=={len(names)}){{\n"
            f"    run({args}); double t[3];\n"
            f"    for(int r=0;r<3;r++){{double t0=now(); run({args}); t[r]=(now()-t0)*1e3;}}\n"
            "    for(int a=0;a<3;a++)for(int b=a+1;b<3;b++) if(t[b]<t[a]){double z=t[a];t[a]=t[b];t[b]=z;}\n"
            "    printf(\"%.6f %.6f %.6f\\n\",t[0],t[1],t[2]); fflush(stdout);\n  }\n  return 0;\n}\n")


C_SRC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define N 256
static float A[N*N], B[N*N], C[N*N];
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
/* one block product C[i0:i1, j0:j1] += A[i0:i1, k0:k1] @ B[k0:k1, j0:j1], k unrolled by U */
static void block(int i0,int i1,int j0,int j1,int k0,int k1,int U){
  for(int i=i0;i<i1;i++) for(int k=k0;k<k1;k+=U){
    for(int u=0;u<U && k+u<k1;u++){ float a=A[i*N+k+u]; float *c=&C[i*N]; const float *b=&B[(k+u)*N];
      for(int j=j0;j<j1;j++) c[j]+=a*b[j]; } } }
static void run(int MB,int NB,int KB,int order,int U){
  memset(C,0,sizeof C);
  int n[3]={N,N,N}, s[3]={MB,NB,KB}; int perm[6][3]={{0,1,2},{0,2,1},{1,0,2},{1,2,0},{2,0,1},{2,1,0}};
  int *p=perm[order]; int x[3];
  for(x[p[0]]=0;x[p[0]]<n[p[0]];x[p[0]]+=s[p[0]])
   for(x[p[1]]=0;x[p[1]]<n[p[1]];x[p[1]]+=s[p[1]])
    for(x[p[2]]=0;x[p[2]]<n[p[2]];x[p[2]]+=s[p[2]])
      block(x[0],x[0]+MB<N?x[0]+MB:N,x[1],x[1]+NB<N?x[1]+NB:N,x[2],x[2]+KB<N?x[2]+KB:N,U);
}
"""
C_SRC += timing_main("for(int i=0;i<N*N;i++){A[i]=(float)(i%7)-3; B[i]=(float)(i%5)-2;}", "MB NB KB o U")
TUNE = {"MB": [4, 8, 16, 32, 64, 128], "NB": [8, 16, 32, 64, 128, 256], "KB": [4, 8, 16, 32, 64, 128],
        "order": [0, 1, 2, 3, 4, 5], "unroll": [1, 4]}
WORKING_SET_CAP = 512 * 1024   # bytes of the three fp32 tiles

CONV_SRC = r"""
#include <stdio.h>
#include <string.h>
#include <time.h>
#define W 512
#define H 512
#define F 5
static float IN[(H+F)*(W+F+16)], OUT[H*W], FL[F*F];
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
/* one output tile [y0,y1) x [x0,x1); S = input row stride (W+F-1+pad) */
static void tile(int y0,int y1,int x0,int x1,int v,int S){
  if(v==0){            /* pixel outer, 25 taps inner, register accumulator */
    for(int y=y0;y<y1;y++) for(int x=x0;x<x1;x++){ float s=0.f;
      for(int fy=0;fy<F;fy++) for(int fx=0;fx<F;fx++) s+=IN[(y+fy)*S+x+fx]*FL[fy*F+fx];
      OUT[y*W+x]=s; }
  } else if(v==1){     /* tap outer, row segment inner (streams, vectorisable) */
    for(int y=y0;y<y1;y++){ for(int x=x0;x<x1;x++) OUT[y*W+x]=0.f;
      for(int fy=0;fy<F;fy++) for(int fx=0;fx<F;fx++){ float f=FL[fy*F+fx]; const float *in=&IN[(y+fy)*S+fx];
        for(int x=x0;x<x1;x++) OUT[y*W+x]+=in[x]*f; } }
  } else {             /* filter row outer over the whole tile, then taps of that row */
    for(int y=y0;y<y1;y++) for(int x=x0;x<x1;x++) OUT[y*W+x]=0.f;
    for(int fy=0;fy<F;fy++) for(int y=y0;y<y1;y++) for(int x=x0;x<x1;x++){ float s=0.f;
      for(int fx=0;fx<F;fx++) s+=IN[(y+fy)*S+x+fx]*FL[fy*F+fx];
      OUT[y*W+x]+=s; }
  }
}
static void run(int TX,int TY,int order,int v,int pad){
  int S=W+F-1+pad;
  if(order==0){ for(int y=0;y<H;y+=TY) for(int x=0;x<W;x+=TX) tile(y,y+TY<H?y+TY:H,x,x+TX<W?x+TX:W,v,S); }
  else        { for(int x=0;x<W;x+=TX) for(int y=0;y<H;y+=TY) tile(y,y+TY<H?y+TY:H,x,x+TX<W?x+TX:W,v,S); }
}
"""
CONV_SRC += timing_main("for(int i=0;i<F*F;i++) FL[i]=(float)(i%3)-1;\n"
                        "  for(int i=0;i<(H+F)*(W+F+16);i++) IN[i]=(float)(i%7)-3;", "TX TY o v pad")
CONV_TUNE = {"TX": [8, 16, 32, 64, 128, 256, 512], "TY": [1, 2, 4, 8, 16, 32, 64],
             "order": [0, 1], "variant": [0, 1, 2], "pad": [0, 1, 16]}
CONV_TILE_CAP = 8192           # output pixels per tile


def _matmul_ok(c: tuple[int, ...]) -> bool:
    return 4 * (c[0] * c[2] + c[2] * c[1] + c[0] * c[1]) <= WORKING_SET_CAP


KERNELS = {   # name -> (C source, tune params, feasibility, default file, kernel name, problem size)
    "matmul": (C_SRC, TUNE, _matmul_ok, "cpu_blocked_matmul.json.gz", "blocked_matmul_f32_256", [256, 256, 256]),
    "conv2d": (CONV_SRC, CONV_TUNE, lambda c: c[0] * c[1] <= CONV_TILE_CAP, "cpu_conv2d.json.gz",
               "conv2d_5x5_f32_512", [512, 512]),
}


def main() -> int:
    ap = argparse.ArgumentParser(description="Brute-force a small CPU tuning space into a Kernel Tuner cache "
                                             "file. (A whole-space forge run exports the same way: "
                                             "forge replay <run> --export FILE.)")
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="matmul")
    ap.add_argument("out", nargs="?", type=Path, help="output file (default spaces/<kernel's file>)")
    args = ap.parse_args()
    src, tune, feasible, default_name, kernel_name, problem = KERNELS[args.kernel]
    out = args.out or Path(__file__).parent / "spaces" / default_name
    tmp = Path(tempfile.mkdtemp())
    (tmp / "mm.c").write_text(src)
    t0 = time.time()
    subprocess.run(["gcc", "-O2", "-o", str(tmp / "mm"), str(tmp / "mm.c")], check=True)
    compile_ms = (time.time() - t0) * 1e3
    cfgs = [c for c in itertools.product(*tune.values()) if feasible(c)]
    proc = subprocess.Popen([str(tmp / "mm")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    cache = {}
    for k, c in enumerate(cfgs):
        t = time.time()
        proc.stdin.write(" ".join(map(str, c)) + "\n")
        proc.stdin.flush()
        times = [float(x) for x in proc.stdout.readline().split()]
        rec = dict(zip(tune, c))
        rec.update(time=times[1], times=times, compile_time=compile_ms, verification_time=0,
                   benchmark_time=(time.time() - t) * 1e3, strategy_time=0, framework_time=0)
        cache[",".join(map(str, c))] = rec
        if k % 200 == 0:
            print(f"{k}/{len(cfgs)}", flush=True)
    proc.stdin.close()
    proc.wait()
    doc = {"device_name": "forge dev host CPU (shared, gcc -O2)", "kernel_name": kernel_name,
           "problem_size": problem, "tune_params_keys": list(tune), "tune_params": tune,
           "objective": "time", "cache": cache}
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt") as fh:
        json.dump(doc, fh)
    print(f"{out}: {len(cache)} of {len(list(itertools.product(*tune.values())))} configs measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
