#!/usr/bin/python3
"""The tests' Java peers, Curator clients (test/interop, test/apps, test/fault), compiled once by
the build (test/support/CMakeLists.txt, which passes the JVM flags of every test JVM). Their jars
are written here only.
    java_peers.py build OUT JVM_FLAG... -- SOURCE.java...
compiles the sources with one javac (run with those flags) into OUT/classes, its output shown
only when it fails (the fault worker's use of sun.misc.Signal draws a warning), and writes
OUT/curator.args, a java argument file: the JVM flags and the classpath (the jars, then the
classes). A test runs a peer as `java [more flags] @OUT/curator.args MainClass ARGS...`."""
import os
import shutil
import subprocess
import sys
import tempfile

CURATOR_JARS = ["curator-framework", "curator-client", "curator-recipes", "zookeeper", "zookeeper-jute",
                "guava", "failureaccess", "slf4j-api", "slf4j-nop", "netty-handler", "netty-transport",
                "netty-common", "netty-buffer", "netty-resolver", "netty-codec",
                "netty-transport-native-epoll", "netty-transport-native-unix-common", "commons-lang3"]


def classpath():
    """The Curator jars installed (Debian's /usr/share/java)."""
    jars = ("/usr/share/java/%s.jar" % j for j in CURATOR_JARS)
    return ":".join(j for j in jars if os.path.exists(j))


def build(out, jvm_flags, sources):
    """Compiles `sources` into out/classes (replaced whole: no class of a removed source stays)
    and writes out/curator.args, last: its presence means the classes are complete."""
    os.makedirs(out, exist_ok=True)
    args_file, classes = os.path.join(out, "curator.args"), os.path.join(out, "classes")
    if os.path.exists(args_file):
        os.remove(args_file)
    shutil.rmtree(classes, ignore_errors=True)
    cp = classpath()
    with tempfile.TemporaryFile(mode="w+") as log:
        if subprocess.call(["javac"] + ["-J" + f for f in jvm_flags] + ["-cp", cp, "-d", classes] + sources,
                           stdout=log, stderr=subprocess.STDOUT) != 0:
            log.seek(0)
            sys.stderr.write(log.read())
            sys.exit("java_peers.py: javac failed")
    with open(args_file, "w") as f:  # one argument a line, quoted (a build dir's path may have spaces)
        for a in jvm_flags + ["-cp", cp + ":" + classes]:
            f.write('"%s"\n' % a.replace("\\", "\\\\").replace('"', '\\"'))


if __name__ == "__main__":
    args = sys.argv[3:]
    if len(sys.argv) < 3 or sys.argv[1] != "build" or "--" not in args:
        sys.exit("usage: java_peers.py build OUT JVM_FLAG... -- SOURCE.java...")
    build(sys.argv[2], args[:args.index("--")], args[args.index("--") + 1:])
