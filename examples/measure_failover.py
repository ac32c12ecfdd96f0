#!/usr/bin/python3
"""Measures scheduler_failover takeover after kill -9 of the leader: starts a throwaway ZooKeeper
(scripts/zk-server.sh), runs 3 instances per round (session timeout 4 s), kills the leader and
times the next "is the leader" line.  Usage: examples/measure_failover.py [ROUNDS]  (BUILD_DIR: build)"""
import subprocess, time, os, signal, sys, re, tempfile
root=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B=os.path.join(os.environ.get("BUILD_DIR", os.path.join(root, "build")), "examples")
d=tempfile.mkdtemp(prefix="zklock-failover-")
zk=subprocess.check_output(["bash",root+"/scripts/zk-server.sh","start",d],text=True).strip()
res=[]
try:
  for run in range(int(sys.argv[1]) if len(sys.argv)>1 else 5):
    procs={}
    lines=[]
    for n in "abc":
      procs[n]=subprocess.Popen(["stdbuf","-oL",B+"/scheduler_failover","--connect",zk,"--name",n+str(run),"--session-timeout","4","--lock","/sched%d/leader"%run,"--job-node","/last_job%d"%run],stdout=subprocess.PIPE,stderr=subprocess.STDOUT,text=True)
      os.set_blocking(procs[n].stdout.fileno(), False)
    def read():
      for n,p in procs.items():
        while True:
          l=p.stdout.readline()
          if not l: break
          lines.append((time.monotonic(),n,l.strip()))
    leader=None; t_end=time.monotonic()+20
    while not leader and time.monotonic()<t_end:
      read()
      for t,n,l in lines:
        if "is the leader" in l: leader=n
      time.sleep(0.01)
    if not leader: print(lines); break  # no leader: show what the instances said
    time.sleep(1.5); read()
    lines.clear()
    t0=time.monotonic(); procs[leader].kill()
    new=None
    while not new and time.monotonic()<t0+15:
      read()
      for t,n,l in lines:
        if "is the leader" in l and n!=leader: new=(t,n)
      time.sleep(0.005)
    res.append(new[0]-t0 if new else None)
    print("run",run,"takeover after kill -9: %.2f s"%(new[0]-t0) if new else "none", flush=True)
    for p in procs.values():
      if p.poll() is None: p.terminate()
    for p in procs.values(): p.wait()
finally:
  subprocess.call(["bash",root+"/scripts/zk-server.sh","stop",d])
v=[x for x in res if x is not None]
print("takeovers:", " ".join("%.2f"%x for x in v), "min %.2f max %.2f"%(min(v),max(v)))
