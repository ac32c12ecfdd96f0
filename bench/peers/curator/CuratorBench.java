// Curator peer for the zklock contention benchmark (see bench/peers/README.md).
//
// N contenders, each with its own CuratorFramework (= its own ZooKeeper session) and its own
// thread, acquire and release one InterProcessMutex at PATH M times each, all in this one JVM.
// Prints ONE line of key=value pairs on stdout (same keys as zklock-bench); --json FILE writes
// the same keys as a flat JSON object. Diagnostics go to stderr. Exit 1 on any violation.
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

public final class CuratorBench {
  private static final int NONE = -1;

  // shared in-process "resource" and handoff bookkeeping
  private static final AtomicInteger holder = new AtomicInteger(NONE);
  private static final AtomicInteger violations = new AtomicInteger();
  private static final AtomicInteger acquisitions = new AtomicInteger();
  // {release start (System.nanoTime), releasing contender} or null when no release is pending
  private static final AtomicReference<long[]> pendingRelease = new AtomicReference<>();
  private static final List<Double> handoffs = new ArrayList<>();

  private static void usage(String msg) {
    System.err.println("CuratorBench: " + msg);
    System.err.println("usage: CuratorBench --connect HOSTS --path PATH --contenders N --cycles M"
        + " [--hold-us U] [--json FILE]");
    System.exit(2);
  }

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable e) { // exit status 1 is reserved for violations
      System.err.println("CuratorBench: " + e);
      e.printStackTrace();
      System.exit(2);
    }
  }

  private static void run(String[] args) throws Exception {
    String connect = "127.0.0.1:2181", path = "/zklock-bench/lock", jsonFile = null, cdfFile = null;
    int contenders = 8, cycles = 100;
    long holdUs = 0;
    for (int i = 0; i < args.length; ++i) {
      String a = args[i];
      String v = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) { v = a.substring(eq + 1); a = a.substring(0, eq); }
      else if (a.startsWith("--") && i + 1 < args.length) v = args[++i];
      if (v == null) usage("missing value for " + a);
      switch (a) {
        case "--connect": connect = v; break;
        case "--path": path = v; break;
        case "--contenders": contenders = Integer.parseInt(v); break;
        case "--cycles": cycles = Integer.parseInt(v); break;
        case "--hold-us": holdUs = Long.parseLong(v); break;
        case "--json": jsonFile = v; break;
        case "--cdf": cdfFile = v; break;
        default: usage("unknown option " + a);
      }
    }
    if (contenders < 1 || cycles < 1) usage("--contenders and --cycles must be >= 1");
    final int soloCycles = Math.max(50, cycles);

    int threadsPeak = threadCount();
    List<CuratorFramework> clients = new ArrayList<>();
    for (int i = 0; i < contenders; ++i) {
      CuratorFramework c = CuratorFrameworkFactory.builder()
          .connectString(connect)
          .sessionTimeoutMs(30_000)
          .connectionTimeoutMs(60_000)
          .retryPolicy(new ExponentialBackoffRetry(100, 5))
          .build();
      c.start();
      clients.add(c);
    }
    for (int i = 0; i < contenders; ++i)
      if (!clients.get(i).blockUntilConnected(60, TimeUnit.SECONDS)) {
        System.err.println("CuratorBench: contender " + i + " could not connect to " + connect);
        System.exit(2);
      }
    System.err.println("CuratorBench: " + contenders + " sessions connected");

    // solo: one contender, uncontended
    double[] solo = new double[soloCycles];
    {
      InterProcessMutex m = new InterProcessMutex(clients.get(0), path);
      for (int k = 0; k < soloCycles; ++k) {
        long t0 = System.nanoTime();
        m.acquire();
        m.release();
        solo[k] = (System.nanoTime() - t0) / 1e3;
      }
    }
    threadsPeak = Math.max(threadsPeak, threadCount());

    final String lockPath = path;
    final int nCycles = cycles;
    final long holdNs = holdUs * 1000;
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    final CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < contenders; ++i) {
      final int me = i;
      final InterProcessMutex m = new InterProcessMutex(clients.get(i), lockPath);
      Thread t = new Thread(() -> {
        try {
          start.await();
          for (int k = 0; k < nCycles; ++k) {
            m.acquire();
            long now = System.nanoTime();
            long[] rel = pendingRelease.getAndSet(null);
            if (rel != null && rel[1] != me) {
              synchronized (handoffs) { handoffs.add((now - rel[0]) / 1e3); }
            }
            if (!holder.compareAndSet(NONE, me)) violations.incrementAndGet();
            acquisitions.incrementAndGet();
            if (holdNs > 0) {
              long until = System.nanoTime() + holdNs;
              while (System.nanoTime() < until) Thread.onSpinWait();
            }
            if (!holder.compareAndSet(me, NONE)) { violations.incrementAndGet(); holder.set(NONE); }
            pendingRelease.set(new long[] {System.nanoTime(), me});
            m.release();
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "contender-" + i);
      threads.add(t);
      t.start();
    }
    threadsPeak = Math.max(threadsPeak, threadCount());
    long tStart = System.nanoTime();
    long cpuStart = processCpuNanos();
    start.countDown();
    for (Thread t : threads) {
      while (t.isAlive()) {
        t.join(50);
        threadsPeak = Math.max(threadsPeak, threadCount());
        if (failure.get() != null) break;
      }
      if (failure.get() != null) break;
    }
    double contendedSeconds = (System.nanoTime() - tStart) / 1e9;
    double cpuContended = (processCpuNanos() - cpuStart) / 1e9;
    if (failure.get() != null) {
      System.err.println("CuratorBench: contender failed: " + failure.get());
      failure.get().printStackTrace();
      System.exit(2);
    }
    threadsPeak = Math.max(threadsPeak, threadCount());
    long rss = rssKb("VmHWM:");
    for (CuratorFramework c : clients) c.close();

    double[] h;
    synchronized (handoffs) { h = handoffs.stream().mapToDouble(Double::doubleValue).toArray(); }
    int acq = acquisitions.get();
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("contenders", Integer.toString(contenders));
    r.put("cycles", Integer.toString(cycles));
    r.put("acquisitions", Integer.toString(acq));
    r.put("throughput", fmt(acq / contendedSeconds));
    r.put("handoff_p50_us", fmt(percentile(h, 50)));
    r.put("handoff_p90_us", fmt(percentile(h, 90)));
    r.put("handoff_p99_us", fmt(percentile(h, 99)));
    r.put("handoff_p999_us", fmt(percentile(h, 99.9)));
    r.put("handoff_max_us", fmt(percentile(h, 100)));
    r.put("handoffs", Integer.toString(h.length));
    r.put("solo_cycle_us", fmt(percentile(solo, 50)));
    r.put("violations", Integer.toString(violations.get()));
    r.put("threads", Integer.toString(threadsPeak));
    r.put("rss_kb", Long.toString(rss));
    r.put("cpu_us_per_acq", fmt(cpuContended * 1e6 / Math.max(1, acq)));

    StringBuilder line = new StringBuilder();
    for (Map.Entry<String, String> e : r.entrySet())
      line.append(line.length() == 0 ? "" : " ").append(e.getKey()).append('=').append(e.getValue());
    System.out.println(line);
    System.out.flush();
    if (jsonFile != null) {
      StringBuilder js = new StringBuilder("{");
      boolean first = true;
      for (Map.Entry<String, String> e : r.entrySet()) {
        String v = e.getValue();
        String jv = v.equals("nan") ? "null" : isNumber(v) ? v : "\"" + v + "\"";
        js.append(first ? "" : ", ").append('"').append(e.getKey()).append("\": ").append(jv);
        first = false;
      }
      js.append("}\n");
      try (PrintWriter w = new PrintWriter(jsonFile)) { w.print(js); }
    }
    if (cdfFile != null) {
      try (PrintWriter w = new PrintWriter(cdfFile)) {
        for (double x : h) w.println(x);
      }
    }
    System.exit(violations.get() == 0 ? 0 : 1);
  }

  private static boolean isNumber(String v) {
    return !v.isEmpty() && (Character.isDigit(v.charAt(0)) || v.charAt(0) == '-');
  }

  private static String fmt(double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) return "nan";
    return String.format(java.util.Locale.ROOT, "%.1f", v);
  }

  // nearest rank, like zklock-bench
  private static double percentile(double[] v, double p) {
    if (v.length == 0) return Double.NaN;
    double[] s = v.clone();
    Arrays.sort(s);
    int idx = (int) Math.ceil(p / 100.0 * s.length);
    return s[Math.min(s.length - 1, idx == 0 ? 0 : idx - 1)];
  }

  private static int threadCount() {
    String[] t = new File("/proc/self/task").list();
    return t == null ? Thread.activeCount() : t.length;
  }

  private static long rssKb(String field) {
    try {
      for (String l : Files.readAllLines(Paths.get("/proc/self/status")))
        if (l.startsWith(field)) return Long.parseLong(l.substring(field.length()).trim().split("\\s+")[0]);
    } catch (IOException | NumberFormatException e) {
      // fall through
    }
    return -1;
  }

  private static long processCpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean)
      return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
    return -1;
  }
}
