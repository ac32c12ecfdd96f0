#!/usr/bin/python3
"""Interop test: zklock processes contend on one lock path with Curator (Java) or kazoo (Python)
processes; the exclusion log must show no overlap and every process must finish.
    run_interop.py curator|kazoo ZKLOCK_CONTENDER SCRIPTS_DIR WORK_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile

peer, contender, scripts, work = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
here = os.path.dirname(os.path.abspath(__file__))
CYCLES = 40
os.makedirs(work, exist_ok=True)
server_dir = tempfile.mkdtemp(prefix="zklock-test-interop-")
connect = subprocess.check_output(["bash", os.path.join(scripts, "zk-server.sh"), "start", server_dir],
                                  text=True).strip()
procs = []
try:
    log = os.path.join(work, "exclusion-%s.log" % peer)
    if os.path.exists(log):
        os.remove(log)
    path = "/interop/%s" % peer
    if peer == "curator":
        jars = ["curator-framework", "curator-client", "curator-recipes", "zookeeper", "zookeeper-jute",
                "guava", "failureaccess", "slf4j-api", "slf4j-nop", "netty-handler", "netty-transport",
                "netty-common", "netty-buffer", "netty-resolver", "netty-codec",
                "netty-transport-native-epoll", "netty-transport-native-unix-common", "commons-lang3"]
        cp = ":".join("/usr/share/java/%s.jar" % j for j in jars if os.path.exists("/usr/share/java/%s.jar" % j))
        classes = os.path.join(work, "classes")
        os.makedirs(classes, exist_ok=True)
        subprocess.check_call(["javac", "-cp", cp, "-d", classes, os.path.join(here, "CuratorContender.java")])
        peer_cmd = lambda who: ["java", "-cp", cp + ":" + classes, "CuratorContender", connect, path,
                                str(CYCLES), log, who]
    else:
        peer_cmd = lambda who: ["/usr/bin/python3", os.path.join(here, "kazoo_contender.py"), connect, path,
                                str(CYCLES), log, who]
    for i in range(2):
        procs.append(subprocess.Popen([contender, connect, path, str(CYCLES), log, "zklock-%d" % i]))
        procs.append(subprocess.Popen(peer_cmd("%s-%d" % (peer, i))))
    failed = False
    for p in procs:
        try:
            if p.wait(timeout=240) != 0:
                print("contender %s exited %d" % (p.args[:3], p.returncode))
                failed = True
        except subprocess.TimeoutExpired:
            print("contender %s timed out" % (p.args[:3],))
            failed = True
    entries, violations, inside, who_entered = 0, 0, None, set()
    with open(log) as f:
        for line in f:
            verb, who = line.split()
            if verb == "enter":
                entries += 1
                who_entered.add(who)
                if inside is not None:
                    violations += 1
                inside = who
            else:
                if inside != who:
                    violations += 1
                inside = None
    print("peer=%s entries=%d violations=%d contenders=%s" % (peer, entries, violations, sorted(who_entered)))
    if failed or violations or entries != 4 * CYCLES or len(who_entered) != 4:
        sys.exit(1)
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    subprocess.call(["bash", os.path.join(scripts, "zk-server.sh"), "stop", server_dir])
