// Curator 5.4 LeaderLatch peer of zklock-election-bench (bench/election_bench.cpp): the same
// two modes, the same keys and lines; see bench/peers/README.md.
//
//   --mode resign --candidates N --resigns R [--hold-ms H] [--session-timeout-ms T] [--json F] [--cdf F]
//     N candidates, each its own CuratorFramework (session) and thread, in this JVM. The leader
//     holds H ms, takes System.nanoTime() and resigns (LeaderLatch.close()); the next leader's
//     code is its LeaderLatchListener.isLeader(), the earliest point Curator runs user code on a
//     new leadership (it is called from the thread that completes the latch's getChildren), which
//     takes the time since. A LeaderLatch cannot restart: the resigner starts a new latch on the
//     same client (it queues last), once the next leader's code ran.
//   --mode candidate --id NAME [--session-timeout-ms T]
//     One candidate of the kill measurement: "connected negotiated_ms=T", "queued" once its node
//     is in the election, "leader id=NAME t_ns=<System.nanoTime()>" (CLOCK_MONOTONIC on Linux,
//     the clock the driver reads) from isLeader(); then leads until killed (SIGTERM closes).
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class CuratorElection {
  private static String connect = "127.0.0.1:2181", path = "/zklock-bench/election", jsonFile, cdfFile, id;
  private static int candidates = 3, resigns = 200, holdMs = 20, sessionTimeoutMs = 10000;

  // resign mode's bookkeeping, under `lock`
  private static final Object lock = new Object();
  private static final List<Double> samples = new ArrayList<>();
  private static long resignStarted = 0;
  private static int resigner = -1, resignsDone = 0, leaders = 0, violations = 0, terms = 0;

  private static void usage(String msg) {
    System.err.println("CuratorElection: " + msg);
    System.err.println("usage: CuratorElection --connect HOSTS --path PATH [--mode resign|candidate] [--candidates N]"
        + " [--resigns R] [--hold-ms H] [--session-timeout-ms T] [--json F] [--cdf F] [--id NAME]");
    System.exit(2);
  }

  public static void main(String[] args) {
    try {
      String mode = "resign";
      for (int i = 0; i < args.length; ++i) {
        String a = args[i];
        if (!a.startsWith("--") || i + 1 >= args.length) usage("bad argument " + a);
        String v = args[++i];
        switch (a) {
          case "--mode": mode = v; break;
          case "--connect": connect = v; break;
          case "--path": path = v; break;
          case "--candidates": candidates = Integer.parseInt(v); break;
          case "--resigns": resigns = Integer.parseInt(v); break;
          case "--hold-ms": holdMs = Integer.parseInt(v); break;
          case "--session-timeout-ms": sessionTimeoutMs = Integer.parseInt(v); break;
          case "--json": jsonFile = v; break;
          case "--cdf": cdfFile = v; break;
          case "--id": id = v; break;
          default: usage("unknown option " + a);
        }
      }
      if (mode.equals("candidate")) {
        if (id == null) usage("--mode candidate needs --id");
        candidate();
      } else if (mode.equals("resign")) {
        if (candidates < 2 || resigns < 1) usage("--candidates >= 2, --resigns >= 1");
        System.exit(resign());
      } else {
        usage("--mode is resign or candidate");
      }
    } catch (Throwable e) {  // exit status 1 is reserved for violations
      System.err.println("CuratorElection: " + e);
      e.printStackTrace();
      System.exit(2);
    }
  }

  private static CuratorFramework client() throws InterruptedException {
    CuratorFramework c = CuratorFrameworkFactory.builder()
        .connectString(connect)
        .sessionTimeoutMs(sessionTimeoutMs)
        .connectionTimeoutMs(60_000)
        .retryPolicy(new ExponentialBackoffRetry(100, 5))
        .build();
    c.start();
    if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) {
      System.err.println("CuratorElection: could not connect to " + connect);
      System.exit(2);
    }
    return c;
  }

  // ---- resign: N candidates in this JVM --------------------------------------------------------

  private static int resign() throws Exception {
    List<CuratorFramework> clients = new ArrayList<>();
    for (int i = 0; i < candidates; ++i) clients.add(client());
    CountDownLatch done = new CountDownLatch(candidates);
    List<Thread> threads = new ArrayList<>();
    final Throwable[] failure = {null};
    for (int i = 0; i < candidates; ++i) {
      final int me = i;
      Thread t = new Thread(() -> {
        try {
          candidateLoop(clients.get(me), me);
        } catch (Throwable e) {
          synchronized (lock) { failure[0] = e; }
        } finally {
          done.countDown();
        }
      });
      threads.add(t);
      t.start();
      Thread.sleep(20);  // queue in order, so that the first resigns find every other candidate waiting
    }
    done.await();
    for (CuratorFramework c : clients) c.close();
    if (failure[0] != null) throw new RuntimeException(failure[0]);
    double[] s;
    synchronized (lock) { s = samples.stream().mapToDouble(Double::doubleValue).toArray(); }
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("kind", "election-resign");
    r.put("candidates", Integer.toString(candidates));
    r.put("resigns", Integer.toString(resignsDone));
    r.put("hold_ms", Integer.toString(holdMs));
    r.put("session_timeout_ms", Integer.toString(sessionTimeoutMs));
    r.put("failover_p50_us", fmt(percentile(s, 50)));
    r.put("failover_p90_us", fmt(percentile(s, 90)));
    r.put("failover_p99_us", fmt(percentile(s, 99)));
    r.put("failover_max_us", fmt(percentile(s, 100)));
    r.put("failovers", Integer.toString(s.length));
    r.put("violations", Integer.toString(violations));
    emit(r);
    if (cdfFile != null) {
      try (PrintWriter w = new PrintWriter(cdfFile)) {
        for (double x : s) w.println(x);
      }
    }
    return violations == 0 ? 0 : 1;
  }

  // One candidate's terms: a new latch per term (a LeaderLatch cannot restart), await the
  // listener's signal, hold, time the resign, close.
  private static void candidateLoop(CuratorFramework client, int me) throws Exception {
    for (;;) {
      synchronized (lock) { if (resignsDone >= resigns) return; }
      Semaphore leading = new Semaphore(0);
      LeaderLatch latch = new LeaderLatch(client, path, "candidate-" + me);
      latch.addListener(new LeaderLatchListener() {
        @Override public void isLeader() {
          long now = System.nanoTime();  // the new leader's code runs here
          synchronized (lock) {
            if (resignStarted != 0 && resigner != me) samples.add((now - resignStarted) / 1e3);
            resignStarted = 0;
            if (++leaders != 1) ++violations;
            ++terms;
            lock.notifyAll();  // the resigner may start its next latch
          }
          leading.release();
        }
        @Override public void notLeader() {}
      });
      latch.start();
      leading.acquire();
      boolean last;
      int termNo;
      synchronized (lock) { last = resignsDone >= resigns; termNo = terms; }
      if (!last) Thread.sleep(holdMs);
      synchronized (lock) {
        --leaders;
        last = resignsDone >= resigns;
        if (!last) {
          ++resignsDone;
          resigner = me;
          resignStarted = System.nanoTime();
        }
      }
      latch.close();
      if (last) return;
      // Rejoin once the next leader's code ran (as zklock-election-bench: a create sent at once
      // would queue ahead of the successor's listing in the standalone server's one pipeline).
      synchronized (lock) {
        while (terms == termNo) lock.wait(100);
      }
    }
  }

  // ---- candidate: one process of the kill measurement --------------------------------------------

  private static void candidate() throws Exception {
    CuratorFramework client = client();
    System.out.println("connected negotiated_ms=" + client.getZookeeperClient().getZooKeeper().getSessionTimeout());
    System.out.flush();
    LeaderLatch latch = new LeaderLatch(client, path, id);
    latch.addListener(new LeaderLatchListener() {
      @Override public void isLeader() {
        long now = System.nanoTime();
        System.out.println("leader id=" + id + " t_ns=" + now);
        System.out.flush();
      }
      @Override public void notLeader() {}
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try { latch.close(); client.close(); } catch (Exception e) { /* exiting */ }
    }));
    latch.start();
    for (;;) {
      boolean in = false;
      for (Participant p : latch.getParticipants()) in |= p.getId().equals(id);
      if (in) break;
      Thread.sleep(10);
    }
    System.out.println("queued");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }

  // ---- output ----------------------------------------------------------------------------------

  private static double percentile(double[] v, double p) {
    if (v.length == 0) return Double.NaN;
    double[] s = v.clone();
    Arrays.sort(s);
    int idx = (int) Math.ceil(p / 100.0 * s.length);
    return s[Math.min(s.length - 1, idx == 0 ? 0 : idx - 1)];
  }

  private static String fmt(double v) { return Double.isNaN(v) ? "nan" : String.format(java.util.Locale.ROOT, "%.1f", v); }

  private static void emit(Map<String, String> r) throws Exception {
    StringBuilder line = new StringBuilder(), json = new StringBuilder("{");
    for (Map.Entry<String, String> e : r.entrySet()) {
      if (line.length() > 0) { line.append(' '); json.append(", "); }
      line.append(e.getKey()).append('=').append(e.getValue());
      String v = e.getValue();
      boolean numeric = v.matches("-?[0-9.]+");
      json.append('"').append(e.getKey()).append("\": ")
          .append(v.equals("nan") ? "null" : numeric ? v : "\"" + v + "\"");
    }
    System.out.println(line);
    System.out.flush();
    if (jsonFile != null) {
      try (PrintWriter w = new PrintWriter(jsonFile)) { w.println(json.append('}')); }
    }
  }
}
